"""The GLEE family's messages for ``agora judge``: the free text a proposer sends with an offer
(games played with ``messages = true``; kind ``offer_message``)."""

from __future__ import annotations

from typing import Any


def messages(turn: dict[str, Any]) -> list[tuple[str, str]]:
    """The message a stored GLEE turn holds as ``[(kind, text)]``: an offer's ``message`` field
    when it says something; empty for decisions and offers without words."""
    action = turn.get("action")
    if not isinstance(action, dict):
        return []
    text = action.get("message")
    return [("offer_message", text.strip())] if isinstance(text, str) and text.strip() else []
