"""The GovSim agents' memory stream as plain, deterministic rules (the original's code:
``simulation/persona/memory/associative_memory.py`` and ``simulation/persona/cognition/`` of
giorgiopiatti/GovSim at 1d11adf). Nothing here calls a model or does I/O: the game makes the
calls (ratings, notes, insights, embeddings) and hands the results in.

Each agent keeps a :class:`MemoryStream` of :class:`Memory` records (an event, a chat summary or
a thought), each with the time it was written, the time it expires, an importance from 1 to 10
and an ``always_include`` flag. Before a decision the agent is shown what :meth:`MemoryStream.retrieve`
returns for the decision's focal points:

- candidates: memories whose expiry is strictly later than now; chat summaries never (the
  original keeps them out of the list retrieval reads);
- score per focal point: ``0.5·recency + 3·(importance − 1)/9 + 2·cos(query, memory)``, recency
  ``0.99^i`` (i: the candidate's place counted from the newest, or from the oldest with
  ``recency="original"``), the raw cosine, nothing min-max normalised; the query is
  ``query_prefix`` + the focal point (the game passes the original's prefix, so an empty focal
  point is a query too), the memory its bare text;
- ``always_include`` memories score the highest score among the candidates plus 1;
- the ``top_k`` best per focal point (equal scores: the earlier-written first), the union,
  sorted by the time written (equal times: by id).

The original's defects, as options whose defaults are ours: its recency favours the *oldest*
memory (``recency="original"`` reproduces it); its same-time memories come out in an order that
changes between runs (ours: by id, always); its chat summary can never be retrieved
(``retrieve_chat=False``, the default, keeps that; the game need not write or rate one).

The fake calendar (:func:`month_dates`), the ``YYYY-MM-DD: text`` lines of a memory block
(:func:`memory_lines`) and the parsers of the model's answers (:func:`parse_importance`,
:func:`split_insights`, :func:`first_sentence`) are here too; the wording of the prompts lives in
the templates.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Iterable, Literal, Protocol, Sequence, TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where vectors are made (listing games or strategies needs none)
    import numpy as np

Kind = Literal["event", "chat", "thought"]
KINDS: tuple[str, ...] = ("event", "chat", "thought")

#: ``newest``: the newest candidate has recency 1 (ours); ``original``: the oldest has (the
#: original's ordering, kept as a named variant).
Recency = Literal["newest", "original"]

#: Weights of the score: recency, importance, relevance (the original's).
RECENCY_WEIGHT = 0.5
IMPORTANCE_WEIGHT = 3.0
RELEVANCE_WEIGHT = 2.0
#: Recency of the candidate i places from the newest (or the oldest): ``RECENCY_DECAY ** i``.
RECENCY_DECAY = 0.99

#: How long a chat summary, a note, an agreed limit and an insight live after being written.
EXPIRY = timedelta(days=63)
#: The importance of a memory written without a rating call (events, the agreed limit).
FIXED_IMPORTANCE = 10
#: The importance when a rating answer holds no whole number from 1 to 10.
DEFAULT_IMPORTANCE = 5

#: The first month's harvest time on the fake calendar.
START = datetime(2024, 1, 1, 1, 0)
#: How the calendar shows a date in a prompt.
DATE_FORMAT = "%Y-%m-%d"


class Embed(Protocol):
    """Texts in, one vector per text out (in the same order)."""

    def __call__(self, texts: list[str]) -> list[list[float]]: ...


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory of one agent. Its embedding is the vector of ``text`` (see
    :class:`EmbeddingCache`), so ``text`` is also the key to it."""

    #: 1, 2, ... in the order the agent wrote its memories (all kinds counted).
    id: int
    kind: Kind
    text: str
    created: datetime
    #: Retrievable while ``expires > now``.
    expires: datetime
    #: 1 (mundane) to 10 (highly significant).
    importance: int
    always_include: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"memory kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if isinstance(self.importance, bool) or not isinstance(self.importance, int) or not 1 <= self.importance <= 10:
            raise ValueError(f"importance {self.importance!r}: expected a whole number from 1 to 10")


@dataclass(frozen=True, slots=True)
class Scored:
    """One candidate's score for one focal point, with its parts (for audits and tests)."""

    memory: Memory
    recency: float
    importance: float
    relevance: float
    #: ``0.5·recency + 3·importance + 2·relevance``, or the highest plus 1 when always included.
    score: float


class EmbeddingCache:
    """Vectors by text: each text is embedded once, however many streams (one per agent of a
    game may share one cache) and retrievals ask for it."""

    def __init__(self) -> None:
        self._vectors: dict[str, np.ndarray] = {}
        #: Texts sent to an ``embed`` callable so far (each once).
        self.embedded = 0

    def __contains__(self, text: str) -> bool:
        return text in self._vectors

    def __len__(self) -> int:
        return len(self._vectors)

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The texts without a vector yet, each once, in first-seen order (what an async caller
        embeds itself before :meth:`put`)."""
        return list(dict.fromkeys(t for t in texts if t not in self._vectors))

    def put(self, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """Keep ``vectors[i]`` as the vector of ``texts[i]``; ValueError on a count mismatch, an
        empty or non-finite vector, or a dimension unlike the vectors kept before."""
        if len(texts) != len(vectors):
            raise ValueError(f"asked to embed {len(texts)} texts, got {len(vectors)} vectors")
        import numpy as np

        dim = next(iter(self._vectors.values())).shape[0] if self._vectors else None
        for text, vector in zip(texts, vectors):
            array = np.asarray(vector, dtype=np.float64)
            if array.ndim != 1 or array.size == 0 or not np.isfinite(array).all():
                raise ValueError(f"the vector of {text[:40]!r} is not a finite, non-empty list of numbers")
            if dim is None:
                dim = array.shape[0]
            elif array.shape[0] != dim:
                raise ValueError(f"the vector of {text[:40]!r} has {array.shape[0]} dimensions, earlier ones {dim}")
            self._vectors[text] = array

    def ensure(self, texts: Iterable[str], embed: Embed | None) -> None:
        """Embed the missing texts with one ``embed`` call (none when nothing is missing);
        ValueError when some are missing and ``embed`` is None."""
        todo = self.missing(texts)
        if not todo:
            return
        if embed is None:
            raise ValueError(f"{len(todo)} texts have no vector and no embed callable was given")
        vectors = embed(todo)
        self.put(todo, vectors)
        self.embedded += len(todo)

    def get(self, text: str) -> np.ndarray:
        """The vector of ``text`` (KeyError when it has none)."""
        return self._vectors[text]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """``a·b / (|a|·|b|)``; 0 when either vector is zero."""
    import numpy as np

    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b)) / (na * nb)


@dataclass
class MemoryStream:
    """One agent's memories in the order written, and the retrieval rule (module doc)."""

    owner: str = ""
    recency: Recency = "newest"
    #: True: chat summaries are candidates too (the original never retrieves them).
    retrieve_chat: bool = False
    cache: EmbeddingCache = field(default_factory=EmbeddingCache)
    memories: list[Memory] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.recency not in ("newest", "original"):
            raise ValueError(f"recency {self.recency!r}: expected 'newest' or 'original'")

    def add(self, kind: Kind, text: str, created: datetime, expires: datetime | None = None, importance: int = FIXED_IMPORTANCE, always_include: bool = False) -> Memory:
        """Write a memory with the next id; it expires ``expires`` or :data:`EXPIRY` after
        ``created``."""
        memory = Memory(len(self.memories) + 1, kind, text, created, expires if expires is not None else created + EXPIRY, importance, always_include)
        self.memories.append(memory)
        return memory

    def retrievable(self, now: datetime) -> list[Memory]:
        """The candidates at ``now``, in the order written: ``expires > now`` (strictly), chat
        summaries left out unless ``retrieve_chat``."""
        return [m for m in self.memories if m.expires > now and (self.retrieve_chat or m.kind != "chat")]

    def texts_to_embed(self, focal_points: Sequence[str], now: datetime, query_prefix: str = "") -> list[str]:
        """Every text a :meth:`retrieve` at ``now`` needs a vector of (queries, then candidates)."""
        return [query_prefix + f for f in focal_points] + [m.text for m in self.retrievable(now)]

    def scores(self, focal_point: str, now: datetime, embed: Embed | None = None, query_prefix: str = "") -> list[Scored]:
        """Every candidate's score for ``focal_point``, in the order written (module doc). The
        query embedded is ``query_prefix + focal_point``; vectors not in the cache come from one
        ``embed`` call."""
        candidates = self.retrievable(now)
        if not candidates:
            return []
        query = query_prefix + focal_point
        self.cache.ensure([query] + [m.text for m in candidates], embed)
        q = self.cache.get(query)
        n = len(candidates)
        parts = []
        for i, memory in enumerate(candidates):
            age = n - 1 - i if self.recency == "newest" else i
            recency = RECENCY_DECAY**age
            importance = (memory.importance - 1) / 9
            relevance = cosine(q, self.cache.get(memory.text))
            parts.append((memory, recency, importance, relevance, RECENCY_WEIGHT * recency + IMPORTANCE_WEIGHT * importance + RELEVANCE_WEIGHT * relevance))
        top = max(p[4] for p in parts)
        return [Scored(m, r, imp, rel, top + 1 if m.always_include else s) for m, r, imp, rel, s in parts]

    def retrieve(self, focal_points: Sequence[str], now: datetime, top_k: int, embed: Embed | None = None, query_prefix: str = "") -> list[Memory]:
        """The ``top_k`` best candidates for each focal point (equal scores: the earlier-written
        first), their union sorted by (created, id). Texts are embedded in one ``embed`` call
        for all focal points; none when the cache holds them all."""
        if top_k < 0:
            raise ValueError(f"top_k={top_k}: expected 0 or more")
        self.cache.ensure(self.texts_to_embed(focal_points, now, query_prefix), embed)
        chosen: dict[int, Memory] = {}
        for focal in focal_points:
            ranked = sorted(self.scores(focal, now, embed, query_prefix), key=lambda s: (-s.score, s.memory.id))
            for scored in ranked[:top_k]:
                chosen[scored.memory.id] = scored.memory
        return sorted(chosen.values(), key=lambda m: (m.created, m.id))


# -- the fake calendar ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MonthDates:
    """The times of month n on the fake calendar (all at 01:00)."""

    #: Day 1: the harvest; the stock event is written then.
    harvest: datetime
    #: One minute before the chat: the private outcome event (so it sorts before the chat's
    #: memories; the date shown is the chat's).
    outcome: datetime
    #: The day before the month's last day: the chat, its notes and the agreed limit.
    chat: datetime
    #: The month's last day: the insights; this month's events expire then.
    reflection: datetime


def month_dates(month: int) -> MonthDates:
    """Month ``month`` (1: January 2024, 13: January 2025, ...) on the fake calendar."""
    if month < 1:
        raise ValueError(f"month {month}: the calendar starts at month 1")
    year = START.year + (month - 1) // 12
    number = (month - 1) % 12 + 1
    last = calendar.monthrange(year, number)[1]
    at = START.time()
    harvest = datetime.combine(datetime(year, number, 1).date(), at)
    reflection = datetime.combine(datetime(year, number, last).date(), at)
    chat = reflection - timedelta(days=1)
    return MonthDates(harvest, chat - timedelta(minutes=1), chat, reflection)


def format_date(when: datetime) -> str:
    """A date as prompts show it: ``YYYY-MM-DD``."""
    return when.strftime(DATE_FORMAT)


def memory_lines(memories: Sequence[Memory], numbered: bool = False) -> list[str]:
    """One line per memory, in the order given: ``- YYYY-MM-DD: text``, or ``n) YYYY-MM-DD: text``
    (n from 1) for the insight prompt, which cites memories by number."""
    return [f"{f'{i})' if numbered else '-'} {format_date(m.created)}: {m.text}" for i, m in enumerate(memories, 1)]


# -- reading the model's answers --------------------------------------------------------------

_WHOLE_NUMBER = re.compile(r"\d+")


def parse_importance(answer: str, default: int = DEFAULT_IMPORTANCE) -> int:
    """The first whole number in ``answer`` when it is from 1 to 10, else ``default`` (the
    original's 5; an out-of-range number counts as no rating)."""
    found = _WHOLE_NUMBER.search(answer or "")
    if found is None:
        return default
    value = int(found.group())
    return value if 1 <= value <= 10 else default


def _marker(number: int) -> re.Pattern[str]:
    """``N.`` as a list number: at the start or after white space, not followed by a digit (the
    original also cut at ``12.`` or ``2.5``)."""
    return re.compile(rf"(?:(?<=\s)|^){number}\.(?!\d)")


def split_insights(answer: str, limit: int) -> list[str]:
    """The insights of a numbered answer, at most ``limit`` (the memories shown).

    The answer is read as the original reads it: a leading ``1.`` is dropped; insight i runs to
    the next number ``i+1.`` or to ``(`` (its justification, skipped up to ``i+1.``), whichever
    comes first; reading stops after an insight whose justification or text is not followed by
    the next number. Insights are stripped; empty ones are left out."""
    text = (answer or "").strip()
    text = re.sub(r"^1\.(?!\d)", "", text, count=1)
    out: list[str] = []
    for i in range(max(0, limit)):
        nxt = _marker(i + 2).search(text)
        paren = text.find("(")
        if paren >= 0 and (nxt is None or paren < nxt.start()):
            out.append(text[:paren])
            nxt = _marker(i + 2).search(text, paren)
            if nxt is None:
                break
        else:
            if nxt is None:
                out.append(text)
                break
            out.append(text[: nxt.start()])
        text = text[nxt.end():]
    return [s for s in (x.strip() for x in out) if s]


def first_sentence(answer: str) -> str:
    """The text up to its first full stop that ends a sentence (followed by white space or the
    end; ``2.5`` and ``e.g.`` inside a word do not end it), stripped, without the stop; the
    original cuts its notes and summary at the first ``.`` of any kind."""
    text = (answer or "").strip()
    end = re.search(r"\.(?=\s|$)", text)
    return (text[: end.start()] if end else text).strip()


__all__ = [
    "DATE_FORMAT",
    "DEFAULT_IMPORTANCE",
    "EXPIRY",
    "Embed",
    "EmbeddingCache",
    "FIXED_IMPORTANCE",
    "Memory",
    "MemoryStream",
    "MonthDates",
    "START",
    "Scored",
    "cosine",
    "first_sentence",
    "format_date",
    "memory_lines",
    "month_dates",
    "parse_importance",
    "split_insights",
]
