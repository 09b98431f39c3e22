"""The study's progress: what the runner has done, how fast, and when it will be done.

Work is counted in turns (decisions), not only finished games, so a study of long games moves
while its first games are still being played. The expected turns per game is the mean over the
games finished so far; until one finishes the total is unknown and so is the ETA.

    ETA = elapsed / turns_done * (expected_turns_per_game * games_to_play - turns_done)

On a terminal the line sits under a rich progress bar; otherwise (logs, CI) the same line is
printed every few seconds.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import IO, Any


@dataclass(frozen=True)
class Snapshot:
    """Everything the progress line shows, at one moment."""

    study: str
    todo: int  # games this run has to play
    finished: int  # of those, finished (done or error)
    skipped: int
    errors: int
    turns_done: int  # turns of finished games plus turns already taken in games in flight
    turns_finished_games: int  # turns of the finished games only
    invalid: int
    elapsed: float
    calls: int
    cache_hits: int
    tokens: int
    cached_tokens: int
    cost: float
    backoffs: int
    rate_limited: int
    in_flight_limit: str  # e.g. "12/16" per adaptive model, "" when none
    #: Per model that reasons: its reasoning tokens and replies cut off at the token limit,
    #: e.g. "o3 12345 tok, 2 cut off" ("" when no model reasons).
    reasoning: str = ""
    #: Batch mode: the round and each open provider batch's state and counts
    #: (:meth:`agorabench.core.lockstep.Lockstep.progress`; "" when no model plays in batches).
    batches: str = ""
    #: Prompt tokens of the calls made (``cached_tokens`` of them from the provider's prompt
    #: cache), and the money per tier the calls were billed at.
    prompt_tokens: int = 0
    by_tier: dict[str, float] | None = None

    @property
    def expected_turns(self) -> float | None:
        """Expected turns of the whole run, from the finished games' mean (None before one)."""
        if self.finished == 0:
            return None
        return self.turns_finished_games / self.finished * self.todo

    @property
    def eta(self) -> float | None:
        total = self.expected_turns
        if total is None or self.turns_done == 0:
            return None if self.finished < self.todo else 0.0
        return self.elapsed / self.turns_done * max(total - self.turns_done, 0.0)

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def invalid_rate(self) -> float:
        return self.invalid / self.turns_finished_games if self.turns_finished_games else 0.0

    def complete(self, final: bool) -> bool:
        """Whether a final snapshot has every game of the run finished (an interrupted run, a
        reached budget or a store failure leave some unplayed: not "done")."""
        return final and self.finished >= self.todo

    def head(self, final: bool = False) -> str:
        """Games, turns and the ETA; at the end "done", or "stopped" with the games left."""
        eta = self.eta
        if final:
            when = "done" if self.complete(final) else f"stopped ({self.todo - self.finished} not played)"
        else:
            when = "ETA --" if eta is None else f"ETA {_duration(eta)}"
        return f"games {self.finished}/{self.todo} (skipped {self.skipped}, errors {self.errors}) turns {self.turns_done} {when}"

    def segments(self) -> list[str]:
        """Calls, tokens, cost, invalid answers, rate limits and each adaptive model's call
        limit, as pieces that are never split across lines."""
        out = [f"calls {self.calls} ({self.calls_per_s:.1f}/s, cache hits {self.cache_hits})"]
        share = f", {self.cached_tokens / self.prompt_tokens:.0%} of input" if self.prompt_tokens else ""
        out.append(f"tokens {self.tokens}" + (f" ({self.cached_tokens} prompt-cached{share})" if self.cached_tokens else ""))
        out += [f"cost ${self.cost:.4f}" + self.tier_line(), f"invalid {self.invalid_rate:.1%}", f"rate limits {self.rate_limited}", f"backoffs {self.backoffs}"]
        if self.reasoning:
            out.append(f"reasoning {self.reasoning}")
        if self.batches:
            out.append(f"batches: {self.batches}")
        if self.in_flight_limit:  # per model: calls in flight now / the most it allows (AIMD after rate limits)
            out.append(f"model calls in flight/allowed {self.in_flight_limit}")
        return out

    def tier_line(self) -> str:
        """The cost per billed tier (:func:`tier_text`)."""
        return tier_text(self.by_tier)

    def details(self) -> str:
        """Calls, tokens, cost, invalid answers and rate limits."""
        return " ".join(self.segments())

    def line(self, final: bool = False) -> str:
        return f"[{self.study}] {self.head(final)} | {self.details()}"


def tier_text(by_tier: dict[str, float] | None) -> str:
    """The cost per billed tier, e.g. `` (flex $0.0120, standard $0.0031)``, when a call was
    billed at a tier other than the standard one ("" otherwise)."""
    spent = {t: d for t, d in (by_tier or {}).items() if d}
    if not spent or set(spent) == {"standard"}:
        return ""
    return " (" + ", ".join(f"{t} ${d:.4f}" for t, d in sorted(spent.items())) + ")"


def _packed(pieces: list[str], width: int) -> list[str]:
    """``pieces`` joined by spaces into lines of at most ``width`` characters (a piece longer
    than that gets a line of its own)."""
    lines: list[str] = []
    for piece in pieces:
        if lines and len(lines[-1]) + 1 + len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class ProgressView:
    """Shows snapshots: a rich bar over the line on a terminal, plain lines elsewhere."""

    def __init__(self, stream: IO[str] | None = None, rich: bool | None = None, plain_interval: float = 10.0, width: int | None = None) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.rich = self.stream.isatty() if rich is None else rich
        self.interval = 0.25 if self.rich else plain_interval
        self._live: Any = None

    def start(self, study: str) -> None:
        if not self.rich:
            return
        from rich.console import Console
        from rich.live import Live

        self._live = Live(console=Console(file=self.stream, force_terminal=True, width=self.width), auto_refresh=False, transient=False)
        self._live.start()

    def show(self, snap: Snapshot, final: bool = False) -> None:
        if self._live is None:
            print(snap.line(final), file=self.stream, flush=True)
            return
        self._live.update(self._render(snap, final, self._live.console.width), refresh=True)

    @staticmethod
    def _render(snap: Snapshot, final: bool, width: int = 80):
        """Study, bar (turns done of the expected turns) and share; then the head; then the
        details, packed into lines of ``width`` without splitting a piece."""
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        total = snap.expected_turns
        done = max(snap.turns_done, int(total or 0)) if snap.complete(final) else snap.turns_done  # a stopped run's bar stays where it stopped
        bar = ProgressBar(total=max(total, done) if total else None, completed=done, width=30, pulse=total is None and not final)
        share = f"{done / max(total, done):4.0%}" if total else "  --"
        row = Table.grid(padding=(0, 1))
        row.add_row(Text(snap.study, style="bold", no_wrap=True, overflow="ellipsis"), bar, Text(share))
        return Group(row, Text("  " + snap.head(final)), *(Text("  " + line, style="dim") for line in _packed(snap.segments(), width - 2)))

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
