"""The commons family's messages for ``agora judge``: a remark in the group chat (``chat``), a
candidate's agenda (``agenda``) and a leader's harvest report (``leader_report``). A new phase
whose players write free text joins by one line in :data:`FIELDS`."""

from __future__ import annotations

from typing import Any

#: phase -> (message kind, the action's field holding the text)
FIELDS: dict[str, tuple[str, str]] = {
    "discuss": ("chat", "message"),
    "agenda": ("agenda", "agenda"),
    "leader_report": ("leader_report", "report"),
}


def messages(turn: dict[str, Any]) -> list[tuple[str, str]]:
    """The message a stored commons turn holds as ``[(kind, text)]`` (empty for a harvest, a
    vote, a memory call, an invalid turn or an empty text)."""
    kind, name = FIELDS.get(turn.get("phase") or "", ("", ""))
    action = turn.get("action")
    if not kind or not isinstance(action, dict):
        return []
    text = action.get(name)
    return [(kind, text.strip())] if isinstance(text, str) and text.strip() else []
