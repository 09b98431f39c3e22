"""Who a participant is: the entry links of recruitment platforms, the pseudonym a person plays
under (``human:<hash>``), and which study game each participant's game fills."""

from __future__ import annotations

import hashlib

from ..store.participants import Participants
from ..store.store import Store


def participant_games(store: Store, study: str) -> dict[str, str]:
    """Participants' game ids of ``study`` -> the id of the study game each one plays (its
    ``base_spec``, whose human seat the participant fills); empty for a database that was never
    served. The tables behind it are in :mod:`agorabench.store.schema`."""
    return Participants(store).games_of(study)


def pid_hash(study: str, participant: str) -> str:
    """Pseudonym of a participant within a study (``model_<role>`` = ``human:<this>``)."""
    return hashlib.sha256(f"{study}\x00{participant}".encode()).hexdigest()[:16]


#: URL parameters of recruitment platforms: (source, participant id, other ids kept).
PLATFORMS = (
    ("prolific", "PROLIFIC_PID", ("STUDY_ID", "SESSION_ID")),
    ("mturk", "workerId", ("assignmentId", "hitId", "turkSubmitTo")),
    ("link", "participant", ()),
)


def participant_from_query(query: dict[str, str]) -> tuple[str, str, dict[str, str]] | None:
    """(source, participant id, platform parameters) from an entry link, or None."""
    for source, key, extra in PLATFORMS:
        value = (query.get(key) or "").strip()
        if value:
            if len(value) > 128 or not all(c.isalnum() or c in "-_.@" for c in value):
                return None
            return source, value, {k: query[k][:128] for k in extra if k in query}
    return None
