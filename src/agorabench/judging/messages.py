"""The stored messages a judge codes: every turn of a study's finished games that its family's
``messages`` reader says holds free text (:func:`agorabench.families.message_reader`), each with
a stable id ``GAME_ID:TURN:KIND``, the speaker's seat and model, and the game's configuration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..families import UnknownGame, message_reader
from ..store.store import Store


@dataclass(frozen=True)
class Message:
    """One message to code."""

    id: str
    game_id: str
    idx: int
    kind: str
    text: str
    game: str = ""
    role: str = ""
    model: str = ""
    config: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def message_id(game_id: str, idx: int, kind: str) -> str:
    """The id a message is stored and matched under (a human coding file uses it)."""
    return f"{game_id}:{idx}:{kind}"


def collect(store: Store, study: str, ids: set[str] | None = None, kinds: set[str] | None = None) -> list[Message]:
    """The messages of the study's finished games (of ``ids`` only, if given; of ``kinds`` only,
    if given), in game and turn order. Games of a family without messages add none."""
    readers: dict[str, Any] = {}
    games = {g["id"]: g for g in store.games(study) if g["status"] == "done" and (ids is None or g["id"] in ids)}
    for g in games.values():
        if g["game"] not in readers:
            try:
                readers[g["game"]] = message_reader(g["game"])
            except UnknownGame:
                readers[g["game"]] = None
    if not any(readers.values()):
        return []
    out: list[Message] = []
    for t in store.turns(study, messages=False):
        g = games.get(t["game_id"])
        reader = readers.get(g["game"]) if g is not None else None
        if reader is None:
            continue
        for kind, text in reader(t):
            if kinds is None or kind in kinds:
                seats = g.get("seats") or {}
                out.append(Message(message_id(g["id"], t["idx"], kind), g["id"], t["idx"], kind, text, g["game"], t["role"], str(seats.get(t["role"], "")), g.get("config") or {}))
    return out
