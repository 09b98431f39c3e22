"""Opening a database: a path or URL turned into an SQLAlchemy engine (:func:`open_engine`),
with SQLite's connection settings (busy timeout, WAL with retries, foreign keys; read-only and
immutable opening), PostgreSQL through psycopg 3, the integrity (quick or full) and layout checks
of an existing file, and the creation of the store's tables. Every failure is a one-line :class:`StoreError`."""

from __future__ import annotations

import operator
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa

from ..redact import redact
from .codec import _dumps, _loads
from .errors import DB_ERRORS, StoreError, StoreFormatError, _problem, damaged, is_damage
from .schema import metadata

#: Tries at switching a SQLite file to WAL (about 10 s in all, see :func:`_sqlite_pragmas`).
WAL_ATTEMPTS = 28


def _url(db: str | Path) -> str:
    """An SQLAlchemy URL: a path is an SQLite file; ``postgresql://`` (or ``postgres://``)
    URLs use the psycopg 3 driver unless they name another."""
    db = str(db)
    if "://" not in db:
        return f"sqlite:///{db}"
    scheme, rest = db.split("://", 1)
    if scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg://{rest}"
    return db


def open_engine(db: str | Path, read_only: bool = False, check_format: bool = True, check_integrity: bool | str = True) -> sa.Engine:
    """The engine of database ``db`` (a SQLite path or a URL), ready for the store: an existing
    SQLite file must pass SQLite's integrity check (``check_integrity``: ``"full"``, ``"quick"``,
    False for none; True is the full check for a read-only opening, which reports and exports
    make, and the quick one otherwise, see :func:`verify_integrity`), so that a damaged file is
    named as such instead of read in part; one of the layout before per-role transcripts is
    refused unless ``check_format`` is off; ``read_only`` opens an existing SQLite file without
    creating anything, otherwise the missing tables are created."""
    url = _url(db)
    shown = redact(str(db))
    existing = False
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :]).expanduser()
        if path.is_dir():
            raise StoreError(f"database {shown} is a folder, not a file")
        existing = check_integrity and path.is_file() and path.stat().st_size > 0
        if read_only:
            if not path.is_file():
                raise StoreError(f"database not found: {shown}")
            # A WAL database needs its -wal and -shm files, which SQLite would create. With no
            # -wal file no one is writing, and ``immutable`` reads the file just as it lies.
            live = Path(f"{path}-wal").exists()
            url = f"sqlite:///file:{quote(str(path.resolve()))}?{'mode=ro' if live else 'immutable=1'}&uri=true"
        else:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder of database {shown}: {exc.strerror or exc}") from None
    try:
        engine = sa.create_engine(url, future=True, json_serializer=_dumps, json_deserializer=_loads)
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", _sqlite_pragmas_ro if read_only else _sqlite_pragmas)
        if existing:
            verify_integrity(engine, shown, full=integrity_level(check_integrity, read_only) == "full")
        if check_format and legacy_layout(engine):
            raise StoreFormatError(f"{shown} stores every turn's whole prompt (the layout before per-role transcripts); upgrade it in place with `agora migrate {shown}`")
        if read_only:
            missing = {"studies", "games", "turns"} - set(sa.inspect(engine).get_table_names())
            if missing:
                raise StoreError(f"{shown} is not an agorabench database (no table {sorted(missing)[0]})")
        else:
            _create_tables(engine)
    except StoreError:
        raise
    except (ImportError, sa.exc.NoSuchModuleError) as exc:
        raise StoreError(f"cannot open database {shown}: its driver is not installed ({_problem(exc)}); for PostgreSQL: pip install psycopg") from None
    except sa.exc.ArgumentError as exc:
        raise StoreError(f"cannot open database {shown}: not a SQLite path or database URL ({_problem(exc)})") from None
    except DB_ERRORS as exc:
        if is_damage(_problem(exc)):
            raise damaged(shown, _problem(exc)) from None
        raise StoreError(f"cannot open database {shown}: {_problem(exc)} (is it a database file, complete, and is the server reachable?)") from None
    return engine


def integrity_level(check: bool | str, read_only: bool) -> str | None:
    """Which integrity check an opening asks for: ``"full"``, ``"quick"`` or None (see :func:`open_engine`)."""
    if check in ("full", "quick"):
        return str(check)
    if not check:
        return None
    return "full" if read_only else "quick"


def verify_integrity(engine: sa.Engine, shown: str, full: bool = True) -> None:
    """StoreError naming the first problem when SQLite's check finds any; nothing for another
    database. ``quick_check`` reads every page and finds pages that do not fit together;
    ``integrity_check`` (``full``) also checks that every index holds exactly its table's rows:
    a damaged index page passes the quick check, and reads through that index then miss rows or
    find others (a run missed stored games and played them again).
    The full check of a 30 MB file (7,500 games) takes about 0.09 s with the file in the page
    cache and 0.45-0.75 s read from disk, the quick one 0.06 s and 0.35-0.5 s; of a 300 MB
    file 1.7 s (6 s) against 0.4 s (5 s)."""
    if engine.dialect.name != "sqlite":
        return
    try:
        with engine.connect() as conn:
            rows = [r[0] for r in conn.exec_driver_sql(f"PRAGMA {'integrity_check' if full else 'quick_check'}(5)")]
    except DB_ERRORS as exc:
        if is_damage(_problem(exc)):
            raise damaged(shown, _problem(exc)) from None
        raise StoreError(f"cannot open database {shown}: {_problem(exc)} (is it a database file, complete?)") from None
    if rows != ["ok"]:
        raise damaged(shown, " ".join(str(r) for r in rows).replace("*** in database main ***", "").strip())


def legacy_layout(engine: sa.Engine) -> bool:
    """Whether the database has the old ``turns.messages`` column (see :func:`~agorabench.store.migrate.migrate`)."""
    inspector = sa.inspect(engine)
    return inspector.has_table("turns") and "messages" in {c["name"] for c in inspector.get_columns("turns")}


def _create_tables(engine: sa.Engine, attempts: int = 10) -> None:
    """Create the missing tables and indexes; another process creating the same ones at the
    same moment ("already exists") only means trying again."""
    for attempt in range(attempts):
        try:
            metadata.create_all(engine)
            return
        except (sa.exc.OperationalError, sa.exc.ProgrammingError, sa.exc.IntegrityError) as exc:
            if "already exists" not in str(exc) and "duplicate" not in str(exc).lower() or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    """Settings of every new connection to a writable SQLite file."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")  # first: another process may hold the file
    # SQLite does not wait (busy_timeout is not consulted) for the lock it takes to switch a new
    # file to WAL, so two processes opening one fresh database together met "database is
    # locked". The switch is tried again for a while; once a process has made it, it is a no-op.
    for attempt in range(WAL_ATTEMPTS):
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_ATTEMPTS - 1:
                raise
            time.sleep(min(0.5, 0.01 * 2**attempt))
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _sqlite_pragmas_ro(dbapi_conn, _record) -> None:
    """Settings of every new connection to a SQLite file opened read-only."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def delete_in(conn: sa.Connection, table: sa.Table, column: sa.Column, values: list[Any]) -> None:
    """``conn.execute(sa.delete(table).where(column.in_(values)))``, the same rows deleted. On
    SQLite the statement's text goes to the driver with the values as they are (a column
    without a bind processor there, as the string keys are): SQLAlchemy coerced each value and
    expanded the IN anew on every call (six deletes per group commit, one per cache write). No
    values: nothing deleted, nothing asked."""
    if not values:
        return
    if conn.dialect.name != "sqlite" or column.table is not table or column.type._cached_bind_processor(conn.dialect) is not None:
        conn.execute(sa.delete(table).where(column.in_(values)))
        return
    prep = conn.dialect.identifier_preparer
    conn.exec_driver_sql(f"DELETE FROM {prep.format_table(table)} WHERE {prep.format_column(column)} IN ({', '.join('?' * len(values))})", tuple(values))


#: (table, column keys of the rows) -> the plan of :func:`insert_rows` for SQLite (the INSERT's
#: text, its values' getter and the bind processors by position), or None where SQLAlchemy's own
#: path must be taken.
_INSERT_PLANS: dict[tuple[sa.Table, frozenset[str], str, Any], tuple[str, Any, list[tuple[int, Any]]] | None] = {}


def insert_rows(conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """``conn.execute(sa.insert(table), rows)`` with the same stored values. On SQLite, rows with
    the first row's keys go to the driver's ``executemany`` as tuples, each value converted by its
    column type's own bind processor (JSON text, booleans) and a missing column given its plain
    default, as SQLAlchemy does, without SQLAlchemy's per-row parameter handling. Rows whose keys
    differ, a key that is no column, a default that is not a plain value, a value a processor
    refuses (SQLAlchemy then raises its error for it), and every other database take
    SQLAlchemy's path."""
    if not rows:
        return
    keys = rows[0].keys()
    plan = _plan(conn.dialect, table, frozenset(keys)) if conn.dialect.name == "sqlite" else None
    if plan is None:
        conn.execute(sa.insert(table), rows)
        return
    sql, get, procs = plan
    n = len(keys)
    params = []
    try:
        for r in rows:
            # a row with as many keys as the first, every one of the plan's among them (``get``
            # raises KeyError for one it lacks), has the first row's keys
            if len(r) != n:
                raise KeyError("the rows' keys differ")
            values = get(r)
            for i, proc in procs:
                values[i] = proc(values[i])
            params.append(tuple(values))
    except Exception:  # keys that differ, or a value its column refuses: SQLAlchemy's path (raising its own error for such a value)
        conn.execute(sa.insert(table), rows)
        return
    conn.exec_driver_sql(sql, params)


def _plan(dialect: sa.Dialect, table: sa.Table, keys: frozenset[str]) -> tuple[str, Any, list[tuple[int, Any]]] | None:
    """The INSERT of :func:`insert_rows` for rows with ``keys`` (made once per table and keys)."""
    # The plan depends on the table (held here, so never collected), the keys, and the dialect's
    # bind processors: its name and its JSON serializer.
    at = (table, keys, dialect.name, getattr(dialect, "_json_serializer", None))
    if at not in _INSERT_PLANS:
        _INSERT_PLANS[at] = _make_plan(dialect, table, keys)
    return _INSERT_PLANS[at]


def _make_plan(dialect: sa.Dialect, table: sa.Table, keys: frozenset[str]) -> tuple[str, Any, list[tuple[int, Any]]] | None:
    """The columns written (the rows' keys, then those left to a plain default), in the table's
    order; a row's values as a list; the bind processors of the columns that have one."""
    if not keys <= set(table.c.keys()):
        return None  # SQLAlchemy leaves such a key out
    given = [c for c in table.c if c.key in keys]
    defaulted = [c for c in table.c if c.key not in keys and c.default is not None]
    if any(not getattr(c.default, "is_scalar", False) for c in defaulted):
        return None
    fixed = [c.default.arg for c in defaulted]
    names = [c.key for c in given]

    if len(names) > 1:  # a row's values by one C call (KeyError for a key it lacks)
        pick = operator.itemgetter(*names)

        def get(row: dict[str, Any]) -> list[Any]:
            return [*pick(row), *fixed]

    else:

        def get(row: dict[str, Any]) -> list[Any]:
            return [row[k] for k in names] + fixed

    procs = [(i, p) for i, c in enumerate(given + defaulted) if (p := c.type._cached_bind_processor(dialect)) is not None]
    prep = dialect.identifier_preparer
    columns = ", ".join(prep.format_column(c) for c in given + defaulted)
    sql = f"INSERT INTO {prep.format_table(table)} ({columns}) VALUES ({', '.join('?' * len(given + defaulted))})"
    return sql, get, procs
