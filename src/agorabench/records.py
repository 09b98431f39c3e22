"""What the play side hands the store: plain records, so that games and importers need no
store and the store needs no game.

:class:`TurnRecord` is one decision as the table records it and the store writes it.

An importer is a generator ``import_logs(folder, study)`` that yields, in any order:

- :class:`GameRecord`: one finished game, typed; its :attr:`~GameRecord.fields` are what
  :meth:`Store.save_game` takes;
- :class:`StudyRecord`: the study row the games belong to;
- ``str``: a problem found in the logs (a game skipped, a move our rules reject), for the user.

:meth:`agorabench.store.store.Store.save_records` writes them and returns (games, problems).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any, Iterator, Union


@dataclass(frozen=True)
class GameRecord:
    """One finished game as an importer hands it to the store: the keyword arguments of
    ``Store.save_game`` (:func:`agorabench.store.layout.game_rows`), typed. ``started`` None:
    not known; ``finished`` None: when it is stored."""

    id: str
    study: str
    game: str
    config: dict[str, Any]
    seats: dict[str, str]
    seed: int
    prompt_version: str
    outcome: dict[str, Any] | None
    metrics: dict[str, float] | None
    turn_records: list[TurnRecord]
    source: str
    repeat: int = 0
    status: str = "done"
    error: str | None = None
    started: float | None = None
    finished: float | None = None

    @property
    def fields(self) -> dict[str, Any]:
        """The record as ``Store.save_game``'s keyword arguments (values as they are, not
        copied: the turn records stay the objects the importer made)."""
        return {f.name: getattr(self, f.name) for f in dataclass_fields(self)}


@dataclass(frozen=True)
class StudyRecord:
    """The study row of imported games. ``spec["games"]``, when present, is merged with the games
    already stored for the study; the row's game is that single game, or ``family`` when the
    study holds several."""

    name: str
    game: str
    spec: dict[str, Any]
    family: str = ""



@dataclass
class TurnRecord:
    """One decision as stored: prompt messages, raw reply, parsed action and bookkeeping."""

    index: int
    role: str
    phase: str
    messages: list[dict[str, str]]
    raw: str
    action: dict[str, Any] | None
    valid: bool
    retries: int
    error: str | None
    prompt_tokens: int | None  # None: not reported by the server (NULL)
    completion_tokens: int | None
    cost: float
    latency: float
    cached: bool
    metrics: dict[str, float] = field(default_factory=dict)
    #: The model's thoughts at this decision, kept apart from ``raw`` (a turn re-asked keeps
    #: each attempt's, marked); None when it gave none.
    reasoning: str | None = None
    #: Output tokens spent thinking, as the provider reported them (None: not reported).
    reasoning_tokens: int | None = None
    #: Why the (last) reply ended: ``stop``, ``length`` (the output token limit), ...; None for
    #: players that are not models.
    finish_reason: str | None = None
    #: Prompt tokens the provider read from its prompt cache, and wrote to it (Anthropic), over
    #: the decision's calls (a re-asked turn adds its attempts up).
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    #: The tier the decision's calls were billed at (``standard``, ``batch``, ``flex``,
    #: ``priority``, ``off_peak``; ``mixed`` when its attempts differ); None: no call billed
    #: (a scripted player, an answer from the response cache).
    tier: str | None = None
    #: Calls of the decision made again at the standard tier after their service tier had no
    #: capacity (``service_tier_fallback``).
    fallbacks: int = 0


Record = Union[GameRecord, StudyRecord, str]
Records = Iterator[Record]
