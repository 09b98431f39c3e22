"""One commons play's shared state (:class:`Play`): what the month's steps (the chat, the
memory steps, the election) read and write besides the game's configuration and words, passed
to them rather than kept on the game."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from .memory import MemoryStream, MonthDates, month_dates

if TYPE_CHECKING:
    from .election import Leadership


@dataclass
class Play:
    """A play's agents by name, their memory streams (written only with ``memory =
    "retrieved"``), the leadership (None without leaders) and the calendar. ``by_name`` maps a
    name back to its role, in seat order."""

    names: dict[str, str]
    streams: dict[str, MemoryStream]
    lead: Leadership | None = None
    by_name: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.by_name = {v: k for k, v in self.names.items()}

    @staticmethod
    def dates(month: int) -> MonthDates:
        """Month ``month``'s days on the play's calendar (:func:`.memory.month_dates`)."""
        return _dates(month)

    def remember(self, role: str, text: str, month: int) -> None:
        """An event of month ``month`` for ``role``: written at the harvest, always shown, gone at
        the month's end."""
        dates = self.dates(month)
        self.streams[role].add("event", text, dates.harvest, dates.reflection, always_include=True)


@lru_cache(maxsize=256)
def _dates(month: int) -> MonthDates:
    return month_dates(month)
