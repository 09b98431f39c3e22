"""The GLEE family's messages for ``agora judge``: the free text a player sends with a move
(games played with ``messages = true``): kind ``PHASE_message``, e.g. ``offer_message`` (an
offer's words in bargaining and negotiation), ``signal_message`` (the seller's words in
persuasion) and ``buy_message`` (the buyer's)."""

from __future__ import annotations

from typing import Any


def messages(turn: dict[str, Any]) -> list[tuple[str, str]]:
    """The message a stored GLEE turn holds as ``[(kind, text)]``: its action's ``message``
    field when it says something; empty for moves without words."""
    action = turn.get("action")
    if not isinstance(action, dict):
        return []
    text = action.get("message")
    kind = f"{turn.get('phase') or 'move'}_message"
    return [(kind, text.strip())] if isinstance(text, str) and text.strip() else []
