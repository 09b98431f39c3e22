"""What the three GLEE families share: the two roles, the horizon convention, accept/reject
decisions, money formatting and the per-config cache of offer action types.

Horizon: ``horizon`` is a number of rounds told to both players, or ``"inf"`` — the paper's
"infinite" horizon, a large number of rounds (``infinite_rounds``) that players are not told.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal, Union

from pydantic import field_validator

from ...core.actions import Action

PROMPTS = Path(__file__).parent / "prompts"

ALICE, BOB = "alice", "bob"
ROLES = (ALICE, BOB)
NAMES = {ALICE: "Alice", BOB: "Bob"}

#: ``"inf"`` or a positive number of rounds known to the players.
Horizon = Union[int, Literal["inf"]]


def other(role: str) -> str:
    return BOB if role == ALICE else ALICE


def rounds_to_play(horizon: Horizon, infinite_rounds: int) -> int:
    """Rounds actually played: the stated horizon, or the hidden large one for ``"inf"``."""
    return infinite_rounds if horizon == "inf" else int(horizon)


def horizon_known(horizon: Horizon) -> int | None:
    """The horizon as the players know it (``None`` when it is "infinite")."""
    return None if horizon == "inf" else int(horizon)


def check_horizon(value: Any) -> Any:
    """Accept ``"inf"``/``"infinite"``/``None`` for the hidden horizon, else a positive int."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("inf", "infinite", "infinity", "∞")):
        return "inf"
    if isinstance(value, float) and value == float("inf"):
        return "inf"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, (int, float)) and not isinstance(value, bool) and int(value) == value and value >= 1:
        return int(value)
    raise ValueError(f"horizon must be a positive number of rounds or 'inf', not {value!r}")


def money(x: float) -> str:
    """An amount in dollars with thousands separators and at most two decimals."""
    if abs(x - round(x)) < 1e-9:
        return f"${round(x):,}"
    return f"${x:,.2f}"


def percent(x: float) -> str:
    return f"{x * 100:g}%"


class Decision(Action):
    """Accept or reject the offer on the table."""

    response_format: ClassVar = "json"

    decision: Literal["accept", "reject"]

    @field_validator("decision", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().strip(".!").lower() if isinstance(v, str) else v


class YesNo(Action):
    """A yes/no answer (the persuasion seller's binary signal, the buyer's purchase)."""

    response_format: ClassVar = "json"

    decision: Literal["yes", "no"]

    @field_validator("decision", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        if isinstance(v, bool):
            return "yes" if v else "no"
        return v.strip().strip(".!").lower() if isinstance(v, str) else v


class JsonForm(Action):
    """JSON actions whose format line shows numbers bare and text quoted, e.g.
    ``{"price": <the price you offer>, "message": "<your message>"}``, so a model is not led
    to answer a number as a string."""

    response_format: ClassVar = "json"

    @classmethod
    def format_instructions(cls) -> str:
        parts = []
        for name, f in cls.model_fields.items():
            hint = f.description or name
            parts.append(f'"{name}": "<{hint}>"' if name in cls.text_fields else f'"{name}": <{hint}>')
        return "Answer with a JSON object of this form:\n{" + ", ".join(parts) + "}"
