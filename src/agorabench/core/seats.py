"""What sits in a seat: the one place that tells a person, a scripted player, an outside agent
and a language model apart, from a model entry or from a seat name as the store keeps it.

A model entry says what it is by its spec (:func:`agorabench.models.spec.spec_kind` reads spec
strings; nothing else does). A stored seat name is an entry's name, or a person's seat of a
served study, ``human:<pseudonym>`` (:func:`person_seat`); ``human`` alone is the one model
every person counts as in analyses. A name says less than an entry: one that is neither a
person's nor ``strategy/NAME`` is :attr:`SeatKind.MODEL`, whose entry (if the caller has it)
tells whether it is local, hosted or an outside agent.

This module imports only the model spec, so that analyses can ask it without loading the engine.
"""

from __future__ import annotations

from enum import Enum
from functools import lru_cache
from typing import Any, Mapping, Protocol, Union, runtime_checkable

from ..models.spec import spec_kind, split_url

#: The spec of a person's seat, and the one model every person is pooled as in analyses.
PERSON = "human"
#: How a served study names a person's seat: ``human:<pseudonym>``.
PERSON_PREFIX = PERSON + ":"
#: How a scripted player's spec (and the name ``--model`` gives its entry) starts.
STRATEGY_PREFIX = "strategy/"


def effort_seat(name: str, display_name: str | None, effort: str) -> dict[str, Any]:
    """The one rule that seats a model entry listing several reasoning efforts: once per effort,
    named ``NAME-EFFORT`` (its display name likewise, or None), with that one effort. Returns
    the entry's fields that change."""
    return {"name": f"{name}-{effort}", "reasoning_effort": effort, "display_name": None if display_name is None else f"{display_name}-{effort}"}


class SeatKind(str, Enum):
    """Who plays a seat. The first five are the kinds of a spec; ``MODEL`` is a stored name
    that names neither a person nor a strategy (an entry's own name)."""

    PERSON = "human"
    STRATEGY = "strategy"
    OUTSIDE = "outside"
    LOCAL = "local"
    HOSTED = "hosted"
    MODEL = "model"

    @property
    def scripted(self) -> bool:
        """A scripted player of the game (``strategy/NAME``)."""
        return self is SeatKind.STRATEGY

    @property
    def person(self) -> bool:
        """A person, played through ``agora serve``."""
        return self is SeatKind.PERSON

    @property
    def called(self) -> bool:
        """A language model this process calls (embedded or hosted): it has a backend, decoding
        settings and a probe; a name of kind ``MODEL`` may be one."""
        return self in (SeatKind.LOCAL, SeatKind.HOSTED)


@runtime_checkable
class HasSpec(Protocol):
    """Anything that says who plays by a spec string (a :class:`~agorabench.core.study.ModelEntry`)."""

    spec: str


Seat = Union[str, HasSpec, Mapping[str, Any]]


@lru_cache(maxsize=4096)
def kind_of_spec(spec: str) -> SeatKind:
    """The kind of a spec string, its ``@URL`` left out (:func:`~agorabench.models.spec.spec_kind`:
    never fails; anything unknown counts as hosted)."""
    return SeatKind(spec_kind(split_url(spec.strip())[0]))


def seat_kind(seat: Seat) -> SeatKind:
    """The kind of a seat given as a model entry (an object with ``spec``, or a stored entry's
    dict: by its spec) or as a stored seat name (``human`` / ``human:<pseudonym>``: a person;
    ``strategy/NAME``: a scripted player; any other name: :attr:`SeatKind.MODEL`). TypeError
    for anything else."""
    if isinstance(seat, str):
        if seat == PERSON or seat.startswith(PERSON_PREFIX):
            return SeatKind.PERSON
        if seat.startswith(STRATEGY_PREFIX):
            return SeatKind.STRATEGY
        return SeatKind.MODEL
    if isinstance(seat, Mapping):
        return kind_of_spec(str(seat.get("spec") or ""))
    if isinstance(seat, HasSpec):
        return kind_of_spec(seat.spec)
    raise TypeError(f"a seat is a seat name or a model entry, not {type(seat).__name__}")


def person_seat(pseudonym: object) -> str:
    """The stored seat name of one participant: ``human:<pseudonym>``."""
    return f"{PERSON_PREFIX}{pseudonym}"


def participant(name: Any) -> str | None:
    """The pseudonym of a participant's stored seat (``human:<pseudonym>``); None for anything
    else (a model, a strategy, the pooled ``human``, a missing value)."""
    if isinstance(name, str) and name.startswith(PERSON_PREFIX):
        return name[len(PERSON_PREFIX) :]
    return None
