"""One stored game as text for a terminal (``agora show``): the game's header (config, seats,
outcome, metrics), then each role's transcript in order — system message, prompts, every reply
including those that were re-asked, the re-ask messages, the parsed action or the parse error,
and per-turn metrics and usage. A model's thoughts (a reasoning model's) follow the reply they led
to, labelled as reasoning no player was shown, with their token count; a reply that ended other
than with a plain stop says how (``finish: length``: cut off at the output token limit).

Re-asks are recovered from the transcript itself: a turn with ``r`` retries is followed, in the
role's next prompt, by ``2r + 1`` messages (reply, re-ask, ..., final reply). A role's last turn
has no next prompt, so only its final reply is known.

A turn shows the messages its prompt has beyond what the role's previous turn already showed. A
game that shows a role only part of its transcript (a bounded window, or the commons memory
stream, where each prompt is the system text and one message) starts a turn's messages afresh:
they are shown from the first message that differs, with a line saying so. Each turn's header
names its phase, so the commons memory calls (``memory_note``, ``memory_rate``,
``memory_insight``) read as what they are, and the memories a decision was shown are in its
prompt, dated.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

from ..core.speech import escape_terminal

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # terminal escapes a model might send


def _clean(text: Any) -> str:
    return _CONTROL.sub("\N{REPLACEMENT CHARACTER}", "" if text is None else str(text))


def _block(label: str, text: Any, indent: str = "    ") -> str:
    body = textwrap.indent(_clean(text).rstrip() or "(empty)", indent)
    return f"  {label}\n{body}"


def _n(value: Any) -> str:
    """A token count as shown: ``?`` when the server did not say (NULL)."""
    return "?" if value is None or value != value else str(int(value)) if isinstance(value, float) else str(value)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def render_game(game: dict[str, Any], turns: list[dict[str, Any]], roles: set[str] | None = None) -> str:
    """The game and its turns (store rows) as plain text; ``roles`` limits the transcripts shown."""
    seats = game.get("seats") or {}
    lines = [
        f"game {game['id']}  ({game['game']}, study {game['study']})",
        f"status {game['status']}  repeat {game['repeat']}  seed {game['seed']}  turns {game.get('n_turns')}  invalid {game.get('n_invalid')}",
        "seats: " + ", ".join(f"{r}={m}" for r, m in seats.items()),
        "config: " + _compact(game.get("config") or {}),
    ]
    if game.get("error"):
        lines.append("error: " + _clean(game["error"]))
    if game.get("outcome") is not None:
        lines.append("outcome: " + _clean(_compact(game["outcome"])))
    if game.get("metrics") is not None:
        lines.append("metrics: " + _compact(game["metrics"]))
    by_role: dict[str, list[dict[str, Any]]] = {}
    for t in sorted(turns, key=lambda t: t["idx"]):
        by_role.setdefault(t["role"], []).append(t)
    for role, role_turns in by_role.items():
        if roles is not None and role not in roles:
            continue
        lines.append("")
        lines.append(f"=== {role} ({seats.get(role, '?')}) ===")
        lines += _role_lines(role_turns)
    return escape_terminal("\n".join(lines))  # players' text never acts on the terminal


def _role_lines(role_turns: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    start = 0
    seen: list[Any] = []  # the messages the previous turn's prompt and replies showed
    for i, t in enumerate(role_turns):
        messages = t.get("messages") or []
        retries = int(t.get("retries") or 0)
        same = 0
        while same < min(len(messages), len(seen), start) and messages[same] == seen[same]:
            same += 1
        fresh = bool(i) and same < start  # the prompt is not the previous one continued
        if fresh:
            start = same
        status = "valid" if t["valid"] else "INVALID"
        usage = f"tokens {_n(t.get('prompt_tokens', 0))}+{_n(t.get('completion_tokens', 0))}, {float(t.get('latency') or 0):.2f} s" + (", cached" if t.get("cached") else "")
        out.append(f"--- turn {t['idx']} · {t.get('phase') or '-'} · {status} · retries {retries} · {usage}")
        if fresh:
            if same == 1 and messages[0].get("role") == "system":
                out.append("  (a fresh prompt: the system message, then only this)")
            else:
                out.append(f"  (a fresh prompt: the first {same} message{'' if same == 1 else 's'} as before, then only this)" if same else "  (a fresh prompt)")
        for m in messages[start:]:
            out.append(_block(f"[{m.get('role', '?')}]", m.get("content")))
        nxt = role_turns[i + 1].get("messages") or [] if i + 1 < len(role_turns) else None
        exchange = nxt[len(messages) : len(messages) + 2 * retries + 1] if nxt is not None and nxt[: len(messages)] == messages else []
        if len(exchange) == 2 * retries + 1:
            for j, m in enumerate(exchange):
                out.append(_block("[reply]" if j % 2 == 0 else "[re-ask]", m.get("content")))
        else:
            if retries:
                out.append(f"  ({retries} earlier repl{'y' if retries == 1 else 'ies'} re-asked; not kept for a role's last turn)")
            out.append(_block("[reply]", t.get("raw")))
        out += _reasoning_lines(t)
        if t["valid"]:
            out.append("  -> action " + _clean(_compact(t.get("action"))))
        else:
            out.append("  -> parse error: " + _clean(t.get("error")))
        if t.get("metrics"):
            out.append("  metrics " + _compact(t["metrics"]))
        start = len(messages) + 2 * retries + 1 if nxt is not None else len(messages)
        seen = list(messages) + list(exchange)
    return out


#: How a reply ended, in words, for the endings worth a line (a plain stop gets none).
ENDINGS = {"length": "cut off at the output token limit", "max_tokens": "cut off at the output token limit", "max_output_tokens": "cut off at the output token limit", "content_filter": "stopped by the provider's content filter", "tool_calls": "asked for a tool instead of answering"}


def _reasoning_lines(t: dict[str, Any]) -> list[str]:
    """The turn's thoughts (kept apart from its reply and from every prompt) under a label that
    says whose they are and that no player saw them, with the reasoning tokens the provider
    reported; then the reply's ending when it was not a plain stop. [] for a turn with neither."""
    out = []
    text, tokens, finish = t.get("reasoning"), t.get("reasoning_tokens"), t.get("finish_reason")
    count = "reasoning tokens not reported" if tokens is None else f"{int(tokens)} reasoning tokens"
    if text is not None:
        shown = text if text.strip() else "(hidden or empty: the provider returned no readable thoughts)"
        lines = _clean(shown).rstrip().splitlines() or [""]
        out.append(f"  [model's reasoning, not shown to any player · {count}]\n" + "\n".join(f"    | {line}".rstrip() for line in lines))
    elif tokens is not None:
        out.append(f"  [model's reasoning: no thoughts returned · {count}]")
    if finish not in (None, "stop", "end_turn"):
        why = ENDINGS.get(str(finish))
        out.append(f"  finish: {_clean(finish)}" + (f" ({why})" if why else ""))
    return out
