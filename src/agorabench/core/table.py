"""The table: the only door between a game's rules and its players.

A game asks a role for a decision with :meth:`Table.ask` (or several roles at once with
:meth:`Table.ask_each`), tells a role what it observes with :meth:`Table.tell`, and draws
nature's randomness only from :attr:`Table.rng`. Each role keeps its own append-only transcript (system
message, then user/assistant turns): what an LLM player sees is exactly that transcript, or, once
the game has called :meth:`Table.forget_before`, its system message and the part after the mark
the game gave (a bounded memory; the transcript itself stays whole).

Invalid answers are re-asked with the validation error, up to ``max_retries`` times; after that
the turn is recorded as invalid and ``ask`` returns the caller's fallback. A player that does
not answer within its time limit (a person, see ``agents.Human``) gets the fallback at once and
the turn is recorded invalid with the error :data:`TIMEOUT`.

Every message is also kept as parts tagged by kind (:class:`Part`): the game's rules (the system
message), the game's text, the task (a prompt's ``instructions``: what to answer), the answer
format (how a model writes its answer), another player's words, a re-ask after an unusable
answer, and the player's answer. Templates mark the answer format and other players' words
(:mod:`agorabench.core.speech`); the table takes the marks out, so players and the store see
plain text, and :meth:`Table.parts` gives what :meth:`Table.shown` gives, part by part (a
person's page leaves out the answer format, which its form replaces).

A game that ranks texts by meaning (the commons memory) asks :meth:`Table.embed` for their
vectors: the table calls the embeddings hook it was given (the runner builds it from the game's
configuration), or, without one, the process's shared embedded model; vectors are kept per
backend and text for the whole process
(:func:`agorabench.models.embeddings.shared_embedder`), so each distinct text is
embedded once.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Protocol, TypeVar

from ..records import TurnRecord
from .actions import Action, ParseError
from .speech import split_marks, unmark

A = TypeVar("A", bound=Action)

#: The kinds of a message's parts: the game's rules (system message), the game's own text, the
#: task (a prompt's ``instructions``), the answer format, another player's words, a re-ask, the
#: player's answer.
RULES, GAME, TASK, FORMAT, SPEECH, REASK, ANSWER = "rules", "game", "task", "format", "speech", "reask", "answer"


@dataclass(frozen=True)
class Part:
    """A stretch of one message's text and what kind of text it is; a message's parts, joined,
    are its content."""

    kind: str
    text: str


def _parts(text: str, kind: str) -> tuple[Part, ...]:
    """``text`` (which may carry marks) as parts, with ``kind`` outside the marks."""
    return tuple(Part(k, t) for k, t in split_marks(text, kind, FORMAT, SPEECH))


def _joined(*groups: tuple[Part, ...]) -> tuple[Part, ...]:
    """The parts of ``groups`` one after another, neighbours of one kind made one part."""
    out: list[Part] = []
    for part in (p for g in groups for p in g):
        if out and out[-1].kind == part.kind:
            out[-1] = Part(part.kind, out[-1].text + part.text)
        else:
            out.append(part)
    return tuple(out)


def without(parts: tuple[Part, ...], *kinds: str) -> str:
    """The text of ``parts`` without the parts of ``kinds`` (e.g. a prompt as a person reads it,
    without the answer format its form replaces)."""
    return "".join(p.text for p in parts if p.kind not in kinds)


def _slice(parts: tuple[Part, ...], start: int, end: int) -> tuple[Part, ...]:
    """The parts of ``text[start:end]``, where ``text`` is ``parts`` joined."""
    out: list[Part] = []
    pos = 0
    for part in parts:
        lo, hi = max(start, pos), min(end, pos + len(part.text))
        if lo < hi:
            out.append(Part(part.kind, part.text[lo - pos : hi - pos]))
        pos += len(part.text)
    return tuple(out)


@dataclass(frozen=True)
class Prompt:
    """What a player is shown at a decision: text for models and people, a structured
    observation for scripted strategies."""

    text: str
    observation: dict[str, Any] = field(default_factory=dict)
    phase: str = ""
    #: The end of ``text`` that only says what to answer and how (the task, the answer format);
    #: once the decision is condensed (:meth:`Table.condense_before`) it is shown without it.
    instructions: str = ""


@dataclass
class Usage:
    """What a reply (or a decision's replies, added up) used and cost: tokens, of the prompt
    tokens those read from and written to the provider's prompt cache, the tier billed (see
    :class:`~agorabench.records.TurnRecord`) and the calls made again at the standard tier."""

    #: None: the server did not say (stored as NULL); a sum is None only when every part is.
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cost: float = 0.0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    tier: str | None = None
    fallbacks: int = 0

    def add(self, other: "Usage") -> None:
        """Add ``other`` (another attempt of the decision) in: sums, and the tier kept when both
        agree (``mixed`` when they differ, the one billed when only one was)."""
        self.prompt_tokens = _plus(self.prompt_tokens, other.prompt_tokens)
        self.completion_tokens = _plus(self.completion_tokens, other.completion_tokens)
        self.cost += other.cost
        self.cached_tokens += other.cached_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.fallbacks += other.fallbacks
        if other.tier is not None:
            self.tier = other.tier if self.tier in (None, other.tier) else "mixed"


def _plus(a: int | None, b: int | None) -> int | None:
    """Two token counts added, an unknown one (None) as nothing; None when both are unknown."""
    return None if a is None and b is None else (a or 0) + (b or 0)


@dataclass
class Reply:
    """A player's answer: raw text, and the action when the player is scripted."""

    text: str
    action: Action | None = None
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    cached: bool = False
    #: The player gave no answer within its time limit (a person); the caller's fallback applies.
    timed_out: bool = False
    #: Validation errors shown to the player before this answer (a person's form), kept with the turn.
    errors: tuple[str, ...] = ()
    #: A model's thoughts, kept apart from ``text`` (never parsed, never shown to anyone).
    reasoning: str | None = None
    reasoning_tokens: int | None = None
    finish_reason: str | None = None
    #: Why this reply cannot count whatever its text says (cut off at the token limit, ...).
    unusable: str | None = None
    #: With ``unusable``: asking again with the same budget would only repeat it (no re-ask).
    final: bool = False


@dataclass
class TurnRequest:
    """Everything a player may use to decide."""

    role: str
    messages: list[dict[str, str]]
    prompt: Prompt
    action_type: type[Action]
    attempt: int
    rng: random.Random
    error: str | None = None
    #: ``messages``, each as its parts by kind (:meth:`Table.parts`).
    parts: list[tuple[Part, ...]] = field(default_factory=list)
    #: How many decisions the role was asked before this one in the game (0, 1, ...): with the
    #: game and the attempt it names the decision, e.g. for the response cache under sampling.
    decision: int = 0


class Player(Protocol):
    """Anything that can answer a turn: an LLM agent, a scripted strategy, a person."""

    async def act(self, request: TurnRequest) -> Reply: ...


#: The ``error`` of a turn whose player did not answer in time.
TIMEOUT = "timeout: no answer within the time limit"


#: Texts in, one vector per text out (in order), awaited.
EmbedHook = Callable[[list[str]], Awaitable[list[list[float]]]]

#: The embeddings a table uses when it was given no hook (``agorabench.models.embeddings.DEFAULT_EMBEDDINGS``).
DEFAULT_EMBEDDER = "minilm"


class _Thoughts:
    """A decision's reasoning over its attempts: each attempt's thoughts, their tokens (None
    while no attempt reported any) and the last reply's finish reason."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, str]] = []
        self.tokens: int | None = None
        self.finish_reason: str | None = None

    def add(self, attempt: int, reply: Reply) -> None:
        if reply.reasoning is not None:
            self.parts.append((attempt, reply.reasoning))
        if reply.reasoning_tokens is not None:
            self.tokens = (self.tokens or 0) + reply.reasoning_tokens
        if reply.finish_reason is not None:
            self.finish_reason = reply.finish_reason

    def text(self) -> str | None:
        """The thoughts as one text: as they are for a decision answered at once, each attempt's
        under a ``[attempt n]`` line otherwise."""
        if not self.parts:
            return None
        if len(self.parts) == 1 and self.parts[0][0] == 0:
            return self.parts[0][1]
        return "\n\n".join(f"[attempt {attempt + 1}]\n{text}" for attempt, text in self.parts)


class BackendFailure(RuntimeError):
    """A player's backend failed for good (after its retries); the game is aborted, not lost.
    ``usage``: what a reply that came but cannot count used (billed all the same)."""

    def __init__(self, message: str, usage: "Usage | None" = None) -> None:
        super().__init__(message)
        self.usage = usage


class TurnLimit(RuntimeError):
    """A game asked for more decisions than its ``max_turns`` allows under its configuration;
    the play ends (the runner stores it with status ``failed`` and this reason, its turns kept)."""


class Table:
    """Seats players by role, keeps their transcripts and records every turn."""

    def __init__(
        self,
        players: dict[str, Player],
        seed: int,
        max_retries: int = 2,
        system: dict[str, str] | None = None,
        nature_seed: int | None = None,
        embed: EmbedHook | None = None,
        max_turns: int | None = None,
    ) -> None:
        self.players = players
        #: The most decisions this play may ask for (the game's ``max_turns``); None: no bound.
        self.max_turns = max_turns
        self._asked = 0
        #: The embeddings hook (:meth:`embed`); None: the process's shared embedded model.
        self._embed = embed
        #: Nature's stream (:attr:`rng`), made at its first use: seeding one costs microseconds
        #: and a game without chance (envy's points) never draws from it.
        self._rng: random.Random | None = None
        self._nature_seed = seed if nature_seed is None else nature_seed
        #: Each seated role's own stream, seeded by ``seed`` and the role, made at its first
        #: decision (hashing a text seed costs microseconds; a role never asked needs none).
        self._player_rngs: dict[str, random.Random] = {}
        self._seed = seed
        self._seated = frozenset(players)
        self.max_retries = max_retries
        self.transcripts: dict[str, list[dict[str, str]]] = {role: [] for role in players}
        #: role -> each transcript message as its parts by kind (joined: the message's content).
        self._parts: dict[str, list[tuple[Part, ...]]] = {role: [] for role in players}
        #: role -> (message index, character offset): where the part a role is shown begins.
        self._shown_from: dict[str, tuple[int, int]] = {}
        #: role -> message index before which its answers are shown as the action they settled on.
        self._condensed_before: dict[str, int] = {}
        #: role -> {index of an assistant message: its parsed action in the action's own format}
        #: (kept as the action until a view first shows it, then as the text: actions are frozen).
        self._final: dict[str, dict[int, str | Action]] = {}
        #: role -> {index of a user message: where the instructions it ends with begin}.
        self._instructions_at: dict[str, dict[int, int]] = {}
        for role, text in (system or {}).items():
            self.set_system(role, text)
        self.turns: list[TurnRecord] = []
        #: Called with each turn as it is recorded (the runner counts a model's invalid turns).
        self.on_turn: Callable[[TurnRecord], None] | None = None
        #: role -> decisions asked so far (:attr:`TurnRequest.decision`).
        self._decisions: dict[str, int] = {}

    @property
    def rng(self) -> random.Random:
        """Nature's stream (qualities, ties, speaking order): seeded by ``nature_seed`` when given,
        which the runner derives from the configuration and repeat only (common random
        numbers), else by ``seed``; players' own streams are seeded by ``seed`` and their role."""
        if self._rng is None:
            self._rng = random.Random(self._nature_seed)
        return self._rng

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self._rng = value

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order, from the hook the table was given, or from the
        process's shared embedded model (:func:`agorabench.models.embeddings.shared_embedder`)."""
        if not texts:
            return []
        if self._embed is not None:
            hook = self._embed
        else:
            from ..models.embeddings import shared_embedder  # the embeddings layer only when asked

            hook = shared_embedder(DEFAULT_EMBEDDER)
        vectors = await hook(list(texts))
        if len(vectors) != len(texts):
            raise BackendFailure(f"embeddings: asked for {len(texts)} vectors, got {len(vectors)}")
        return vectors

    def set_system(self, role: str, text: str) -> None:
        """Set (or replace, before any turn) the role's system message (the game's rules; a
        format mark in it starts the part that says how to write answers)."""
        transcript = self.transcripts.setdefault(role, [])
        parts = self._parts.setdefault(role, [])
        rules = _parts(text, RULES)
        message = {"role": "system", "content": "".join(p.text for p in rules)}  # unmark(text)
        if transcript and transcript[0]["role"] == "system":
            transcript[0], parts[0] = message, rules
        else:
            transcript.insert(0, message)
            parts.insert(0, rules)

    def tell(self, role: str, text: str, kind: str = GAME) -> None:
        """Add an observation to the role's transcript without asking for a decision.

        Consecutive user messages are merged so chat templates stay alternating.
        """
        self._tell(role, _parts(text, kind))

    def _tell(self, role: str, new: tuple[Part, ...]) -> None:
        transcript = self.transcripts.setdefault(role, [])
        parts = self._parts.setdefault(role, [])
        text = "".join(p.text for p in new)
        if transcript and transcript[-1]["role"] == "user":
            transcript[-1] = {"role": "user", "content": transcript[-1]["content"] + "\n\n" + text}
            joint = (Part(new[0].kind if new else GAME, "\n\n" + (new[0].text if new else "")),) + new[1:]
            parts[-1] = _joined(parts[-1], joint)
        else:
            transcript.append({"role": "user", "content": text})
            parts.append(new)

    def tell_all(self, roles: list[str] | tuple[str, ...], text: str) -> None:
        """Tell every role in ``roles`` the same text (a public announcement)."""
        for role in roles:
            self.tell(role, text)

    def restart(self, role: str, system: str) -> None:
        """Start the role's transcript afresh from a new system message, as for a player who
        remembers nothing of earlier rounds. Turns already recorded keep the prompts they were
        shown (each turn stores its own messages)."""
        self.transcripts[role] = []
        self._parts[role] = []
        for kept in (self._shown_from, self._condensed_before, self._final, self._instructions_at):
            kept.pop(role, None)
        self.set_system(role, system)

    def last_valid(self, role: str) -> bool:
        """Whether the role's latest recorded decision was valid (False before its first)."""
        for turn in reversed(self.turns):
            if turn.role == role:
                return turn.valid
        return False

    def mark(self, role: str) -> tuple[int, int]:
        """The point the role's transcript has reached: what is told from now on lies after it.

        A point inside the last user message (later observations are merged into it) is kept as
        a character offset, so a mark never splits the transcript into two user messages."""
        transcript = self.transcripts.setdefault(role, [])
        if transcript and transcript[-1]["role"] == "user":
            return len(transcript) - 1, len(transcript[-1]["content"])
        return len(transcript), 0

    def forget_before(self, role: str, mark: tuple[int, int]) -> None:
        """From the role's next decision on, show it only its system message and what follows
        ``mark`` (from :meth:`mark`). The transcript itself is kept whole."""
        self._shown_from[role] = mark

    def condense_before(self, role: str, mark: tuple[int, int]) -> None:
        """From the role's next decision on, show its decisions before ``mark`` condensed: each
        answer as the action it settled on, written in the action's own format (``Answer: 10``),
        without the reasoning around it, and each prompt without its ``instructions``. Answers
        that could not be used are shown as given."""
        self._condensed_before[role] = mark[0]

    def shown(self, role: str) -> list[dict[str, str]]:
        """The messages the role is shown at a decision (see :meth:`forget_before` and
        :meth:`condense_before`)."""
        return [{"role": r, "content": "".join(p.text for p in parts)} for r, parts in self._view(role)]

    def parts(self, role: str) -> list[tuple[Part, ...]]:
        """:meth:`shown`, each message as its parts by kind."""
        return [parts for _, parts in self._view(role)]

    def _view(self, role: str) -> list[tuple[str, tuple[Part, ...]]]:
        """(message role, parts) of what the role is shown: decisions before the condense mark
        as their final action and their prompts without the task; after a forget mark, the
        system message and what follows the mark."""
        transcript = self.transcripts.setdefault(role, [])
        stored = self._parts.setdefault(role, [])
        view = list(zip((m["role"] for m in transcript), stored))
        upto = self._condensed_before.get(role, 0)
        if upto:
            final, cut = self._final.get(role, {}), self._instructions_at.get(role, {})
            for i, (who, parts) in enumerate(view[:upto]):
                if i in final:
                    shown = final[i]
                    if not isinstance(shown, str):
                        shown = final[i] = shown.render()
                    view[i] = (who, (Part(ANSWER, shown),))
                elif i in cut:
                    content = transcript[i]["content"]
                    view[i] = (who, _slice(parts, 0, len(content[: cut[i]].rstrip())))
        mark = self._shown_from.get(role)
        if mark is None:
            return view
        index, offset = mark
        head = view[:1] if view and view[0][0] == "system" else []
        if index < len(head):
            index, offset = len(head), 0
        rest = view[index:]
        if rest and offset:
            who, parts = rest[0]
            text = "".join(p.text for p in parts)
            start = offset + len(text[offset:]) - len(text[offset:].lstrip("\n"))
            kept = _slice(parts, start, len(text))
            rest = ([(who, kept)] if kept else []) + rest[1:]
        return head + rest

    async def ask(self, role: str, prompt: Prompt, action_type: type[A], fallback: A | None = None) -> A | None:
        """Ask one role for a decision; return the action, or ``fallback`` if it stays invalid.
        :class:`TurnLimit` when the play has already asked for ``max_turns`` decisions."""
        self._count_turns(1)
        player = self.players[role]
        prompt, parts = self._unmarked(prompt)
        self._tell(role, parts)
        if prompt.instructions and prompt.text.endswith(prompt.instructions):
            last = self.transcripts[role][-1]["content"]
            self._instructions_at.setdefault(role, {})[len(self.transcripts[role]) - 1] = len(last) - len(prompt.instructions)
        retries, error = 0, None
        raw = ""
        usage = Usage(prompt_tokens=None, completion_tokens=None)  # unknown until a reply says (a scripted one: 0)
        latency = 0.0
        cached = True
        thoughts = _Thoughts()
        decision = self._decisions.get(role, 0)
        self._decisions[role] = decision + 1
        rng = self._player_rngs.get(role)
        if rng is None:
            if role not in self._seated:
                raise KeyError(role)
            rng = self._player_rngs[role] = random.Random(f"{self._seed}:{role}")
        messages, shown = self._shown(role)
        messages_at_ask = [dict(m) for m in messages]  # what the turn stores, apart from what players are handed
        while True:
            if retries:  # a re-ask added the answer and our feedback
                messages, shown = self._shown(role)
            request = TurnRequest(role, messages, prompt, action_type, retries, rng, error, shown, decision)
            started = time.perf_counter()
            await asyncio.sleep(0)  # every turn yields (a scripted player never waits), so a stop lands
            try:
                reply = await player.act(request)
            except BackendFailure as exc:
                if exc.usage is not None:
                    usage.add(exc.usage)
                if exc.usage is not None or usage.prompt_tokens or usage.completion_tokens or usage.cost:  # billed (or maybe, unknown: a timeout): kept in the game's record
                    self._record(role, prompt, messages_at_ask, raw, None, False, retries, str(exc), usage, latency, False, thoughts)
                raise
            latency += reply.latency or (time.perf_counter() - started)
            usage.add(reply.usage)
            cached = cached and reply.cached
            thoughts.add(retries, reply)
            raw = reply.text
            if reply.timed_out:
                self._answer(role, "(no answer within the time limit)")
                self._record(role, prompt, messages_at_ask, raw, None, False, retries, TIMEOUT, usage, latency, cached, thoughts)
                return fallback
            self._answer(role, raw)  # the answer only: a model's thoughts never enter a transcript
            if reply.unusable is not None:
                error = reply.unusable
                if reply.final:  # asking again with the same budget would only repeat it
                    self._record(role, prompt, messages_at_ask, raw, None, False, retries, error, usage, latency, cached, thoughts)
                    return fallback
            else:
                try:
                    action = reply.action if reply.action is not None else action_type.parse(raw)
                    if not isinstance(action, action_type):
                        raise ParseError(f"Expected a {action_type.__name__}.")
                    self._final.setdefault(role, {})[len(self.transcripts[role]) - 1] = action  # rendered when shown (_view)
                    shown = "; ".join(reply.errors) or None  # a person's corrected form errors
                    self._record(role, prompt, messages_at_ask, raw, action, True, retries, shown, usage, latency, cached, thoughts)
                    return action
                except ParseError as exc:
                    error = str(exc)
            if retries >= self.max_retries:
                self._record(role, prompt, messages_at_ask, raw, None, False, retries, error, usage, latency, cached, thoughts)
                return fallback
            retries += 1
            self.tell(role, f"Your answer could not be used: {error} Please answer again in the required format.", kind=REASK)

    def _shown(self, role: str) -> tuple[list[dict[str, str]], list[tuple[Part, ...]]]:
        """What the role is shown now: :meth:`shown` and :meth:`parts` at once. A role shown its
        whole transcript (nothing condensed, nothing forgotten) gets each message's content as
        the transcript holds it (every writer of a transcript stores the join of its parts)
        and its parts as kept; otherwise each message of :meth:`_view`, its parts joined."""
        if role not in self._shown_from and not self._condensed_before.get(role, 0):
            transcript = self.transcripts.setdefault(role, [])
            stored = self._parts.setdefault(role, [])
            return [{"role": m["role"], "content": m["content"]} for m in transcript], stored[: len(transcript)]
        view = self._view(role)
        return [{"role": r, "content": "".join(p.text for p in parts)} for r, parts in view], [parts for _, parts in view]

    def _count_turns(self, n: int) -> None:
        """Count ``n`` more decisions; :class:`TurnLimit` (nothing counted) past ``max_turns``."""
        if self.max_turns is not None and self._asked + n > self.max_turns:
            raise TurnLimit(f"the game asked for more than {self.max_turns} turns, its max_turns under this configuration")
        self._asked += n

    @staticmethod
    def _unmarked(prompt: Prompt) -> tuple[Prompt, tuple[Part, ...]]:
        """``prompt`` without marks, and its text as parts: the prompt's ``instructions`` are
        the task when the text ends with them (the parts before and after the cut joined as
        :func:`_joined` joins them)."""
        text, task = prompt.text, prompt.instructions
        pieces = split_marks(text, GAME, FORMAT, SPEECH)
        plain = "".join(t for _, t in pieces)  # unmark(text): the parts joined
        task = unmark(task)
        if task and plain.endswith(task):
            cut = len(plain) - len(task)
            marked: list[tuple[str, str]] = []
            pos = 0
            for kind, piece in pieces:
                end = pos + len(piece)
                if end <= cut:
                    marked.append((kind, piece))
                elif pos >= cut:
                    marked.append((TASK if kind == GAME else kind, piece))
                else:  # the cut falls inside this piece
                    marked.append((kind, piece[: cut - pos]))
                    marked.append((TASK if kind == GAME else kind, piece[cut - pos :]))
                pos = end
            merged: list[tuple[str, str]] = []
            for kind, piece in marked:
                if merged and merged[-1][0] == kind:
                    merged[-1] = (kind, merged[-1][1] + piece)
                else:
                    merged.append((kind, piece))
            parts = tuple(Part(k, t) for k, t in merged)
        else:
            parts = tuple(Part(k, t) for k, t in pieces)
        if plain == prompt.text and task == prompt.instructions:
            return prompt, parts
        if type(prompt) is Prompt:  # what dataclasses.replace builds, without its generic work
            return Prompt(plain, prompt.observation, prompt.phase, task), parts
        return replace(prompt, text=plain, instructions=task), parts

    def _answer(self, role: str, text: str) -> None:
        self.transcripts[role].append({"role": "assistant", "content": text})
        self._parts[role].append((Part(ANSWER, text),))

    async def ask_each(self, requests: dict[str, tuple[Prompt, type[Action], Action | None]]) -> dict[str, Action | None]:
        """Ask several roles at once (simultaneous moves); each sees only its own transcript.
        Their turns are recorded in seat order, not in the order the answers arrive, so that
        identical runs store identical turn tables."""
        roles = list(requests)
        first = len(self.turns)
        self._count_turns(len(requests))  # all or none of them are asked
        self._asked -= len(requests)  # each ask counts its own
        results = await asyncio.gather(*(self.ask(r, p, t, fb) for r, (p, t, fb) in requests.items()))
        seat = {role: i for i, role in enumerate(self.players)}
        new = sorted(self.turns[first:], key=lambda turn: seat.get(turn.role, len(seat)))
        for i, turn in enumerate(new):
            turn.index = first + i
        self.turns[first:] = new
        return dict(zip(roles, results))

    def note_metrics(self, role: str, metrics: dict[str, float]) -> None:
        """Attach per-turn metrics to the role's latest turn."""
        for turn in reversed(self.turns):
            if turn.role == role:
                turn.metrics.update(metrics)
                return
        raise KeyError(f"no turn for role {role!r}")

    def _record(self, role, prompt, messages, raw, action, valid, retries, error, usage, latency, cached, thoughts: "_Thoughts | None" = None) -> None:
        thoughts = thoughts or _Thoughts()
        self.turns.append(
            TurnRecord(
                index=len(self.turns),
                role=role,
                phase=prompt.phase,
                messages=messages,
                raw=raw,
                action=action.model_dump() if action is not None else None,
                valid=valid,
                retries=retries,
                error=error,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost=usage.cost,
                latency=latency,
                cached=cached,
                reasoning=thoughts.text(),
                reasoning_tokens=thoughts.tokens,
                finish_reason=thoughts.finish_reason,
                cached_tokens=usage.cached_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                tier=usage.tier,
                fallbacks=usage.fallbacks,
            )
        )
        if self.on_turn is not None:
            self.on_turn(self.turns[-1])

    @property
    def invalid_turns(self) -> int:
        return sum(1 for t in self.turns if not t.valid)
