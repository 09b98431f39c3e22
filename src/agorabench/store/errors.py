"""How the store reports trouble: :class:`StoreError` (and :class:`StoreFormatError`), the
database-layer exceptions it turns into one, and the one-line wording of a failure, a damaged
SQLite file included. Every message goes through :func:`~agorabench.redact.redact`."""

from __future__ import annotations

import sqlalchemy as sa

from ..redact import redact


class StoreError(RuntimeError):
    """The database cannot be opened, read or written; the message says what to do."""


class StoreFormatError(StoreError):
    """The database was written in an older layout; the message says what to do."""


#: Errors of the database layer (SQLAlchemy's, the driver's, the file system's, a value the
#: database cannot hold).
DB_ERRORS = (sa.exc.SQLAlchemyError, OSError, OverflowError, ImportError)

#: Words of SQLite's errors that mean the file itself is damaged (pages, or text that is not UTF-8).
DAMAGE_SIGNS = ("malformed", "could not decode", "database corrupt", "integrity check")


def _problem(exc: BaseException) -> str:
    """The first line of a database error, without SQL, parameters or secrets."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip().splitlines()
    return redact(text[0] if text else type(exc).__name__)


def is_damage(detail: str) -> bool:
    """Whether a database error's text says the file is damaged."""
    text = detail.lower()
    return any(sign in text for sign in DAMAGE_SIGNS)


def damaged(db: str, detail: str) -> StoreError:
    """The one-line error for a damaged SQLite file: what is wrong and what to do."""
    first = (detail.strip().splitlines() or ["failed the integrity check"])[0]
    return StoreError(f"database file is damaged: {db}: {redact(first)} (restore a copy, or rebuild it: `sqlite3 {db} .recover | sqlite3 recovered.db`)")
