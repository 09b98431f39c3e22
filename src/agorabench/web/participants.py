"""Who a participant is: the entry links of recruitment platforms, the pseudonym a person plays
under (``human:<hash>``), and which study game each participant's game fills.

A participant id is known by its *key*: the id as given, NFKC-normalised, case-folded and
stripped (:func:`participant_key`), so ``ABC123``, ``abc123`` and the fullwidth ``ＡＢＣ１２３``
are one person. The pseudonym hashes the key; a lower-case ASCII id is its own key, so its
pseudonym is what it was before ids were normalised."""

from __future__ import annotations

import hashlib
import unicodedata

from ..store.participants import Participants
from ..store.store import Store


def participant_games(store: Store, study: str) -> dict[str, str]:
    """Participants' game ids of ``study`` -> the id of the study game each one plays (its
    ``base_spec``, whose human seat the participant fills); empty for a database that was never
    served. The tables behind it are in :mod:`agorabench.store.schema`."""
    return Participants(store).games_of(study)


def pid_hash(study: str, participant: str) -> str:
    """Pseudonym of a participant within a study (``model_<role>`` = ``human:<this>``), from the
    participant's key (:func:`participant_key`; a hash of any other form is only an old row's)."""
    return hashlib.sha256(f"{study}\x00{participant}".encode()).hexdigest()[:16]


def display_id(participant: str) -> str:
    """The id as stored and paid (NFKC, stripped, its case kept: a platform may need it so)."""
    return unicodedata.normalize("NFKC", participant).strip()


def participant_key(participant: str) -> str:
    """What identifies a participant: NFKC, then case-folded (and NFKC again, as case folding
    can undo it), stripped. Look-alike ids (another case, fullwidth forms) share one key."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", participant).casefold()).strip()


def id_refusal(participant: str, ids: str = "ascii") -> str | None:
    """Why the id is refused under the study's ``participant_ids`` setting, or None: with
    ``"ascii"`` (the default) an id whose key is not plain ASCII, e.g. with Cyrillic letters that
    look like Latin ones, is turned away; ``"unicode"`` accepts any letters."""
    if ids == "ascii" and not participant_key(participant).isascii():
        return "This participant id contains characters other than plain letters (a-z), digits and - _ . @. Please check that you opened the link exactly as you were given it."
    return None


#: URL parameters of recruitment platforms: (source, participant id, other ids kept).
PLATFORMS = (
    ("prolific", "PROLIFIC_PID", ("STUDY_ID", "SESSION_ID")),
    ("mturk", "workerId", ("assignmentId", "hitId", "turkSubmitTo")),
    ("link", "participant", ()),
)


def participant_from_query(query: dict[str, str]) -> tuple[str, str, dict[str, str]] | None:
    """(source, participant id as given, platform parameters) from an entry link, or None. The
    id's normalised form (:func:`display_id`) must be letters, digits and ``-_.@``, at most 128
    characters."""
    for source, key, extra in PLATFORMS:
        value = (query.get(key) or "").strip()
        if value:
            if len(value) > 128:
                return None
            shown = display_id(value)
            if not shown or len(shown) > 128 or not all(c.isalnum() or c in "-_.@" for c in shown):
                return None
            return source, value, {k: query[k][:128] for k in extra if k in query}
    return None
