"""A model's long thoughts stored once per database (table ``thoughts``), content-addressed.

A turn's thoughts are written by two writers: the game's ``reasoning`` row and the response
cache's answer (so that a replay reproduces the turn). Thoughts of :data:`~.codec.PACK_TEXT_FROM`
characters or more (at the length cap 0.8 MB per reply) go into ``thoughts`` once, packed
(:func:`~.codec.pack_text`) and keyed by the SHA-256 of their text (never by an object's
identity or representation); both rows hold only the reference ``sha256:<64 hex digits>``. Two
writers of one text (the cache and the game, two processes, a replay) write one row: an insert
of a hash already there is skipped. Reading resolves a reference in the same database; a value
that is no reference, or one whose row is missing, reads as it is (:func:`~.codec.unpack_text`):
databases written before the table keep their plain or packed copies and read as before.
Rows are never deleted with a game (a cache answer may still name them)."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable

import sqlalchemy as sa

from .codec import PACK_TEXT_FROM, pack_text, unpack_text
from .schema import thoughts

#: How a row names thoughts stored in the ``thoughts`` table.
REF = "sha256:"
_REF = re.compile(r"sha256:[0-9a-f]{64}")


def stored_thought(text: str | None) -> tuple[str | None, dict[str, str] | None]:
    """What a row holds for the thoughts ``text`` (already made storable) and the ``thoughts``
    row to write with it: short thoughts (and None) as they are, with no row; long ones as their
    reference, with ``{"hash", "text"}`` (the text packed)."""
    if text is None or len(text) < PACK_TEXT_FROM:
        return text, None
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return REF + digest, {"hash": digest, "text": pack_text(text)}


def is_ref(value: Any) -> bool:
    """Whether a stored value is a reference to the ``thoughts`` table."""
    return isinstance(value, str) and len(value) == len(REF) + 64 and _REF.fullmatch(value) is not None


def save(conn: sa.Connection, rows: Iterable[dict[str, str] | None]) -> None:
    """Write ``thoughts`` rows whose hash the table does not hold yet (one per hash; a hash
    written meanwhile by another writer is skipped, not an error)."""
    unique = {r["hash"]: r for r in rows if r}
    if not unique:
        return
    dialect = conn.dialect.name
    if dialect in ("sqlite", "postgresql"):
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        conn.execute(insert(thoughts).on_conflict_do_nothing(index_elements=["hash"]), list(unique.values()))
        return
    have = set(conn.execute(sa.select(thoughts.c.hash).where(thoughts.c.hash.in_(list(unique)))).scalars())  # pragma: no cover - other databases
    rest = [r for h, r in unique.items() if h not in have]
    if rest:
        conn.execute(sa.insert(thoughts), rest)


def resolve(conn: sa.Connection, values: Iterable[Any]) -> dict[str, str]:
    """Reference -> thoughts (unpacked) for the references among ``values`` whose rows the
    database holds; {} when there is no reference (no query) or no ``thoughts`` table."""
    refs = sorted({v[len(REF):] for v in values if is_ref(v)})
    if not refs or not sa.inspect(conn).has_table("thoughts"):
        return {}
    found: dict[str, str] = {}
    for i in range(0, len(refs), 500):
        for digest, text in conn.execute(sa.select(thoughts.c.hash, thoughts.c.text).where(thoughts.c.hash.in_(refs[i : i + 500]))):
            found[REF + digest] = unpack_text(text)
    return found


def read(value: Any, found: dict[str, str]) -> Any:
    """A stored value as the thoughts it names: a reference through ``found``
    (:func:`resolve`), anything else unpacked (:func:`~.codec.unpack_text`)."""
    if is_ref(value) and value in found:
        return found[value]
    return unpack_text(value)
