"""The store: every study, game and turn, plus the response cache, in SQLite (one file, WAL)
or PostgreSQL (by URL), through SQLAlchemy Core.

A finished game is written in one transaction with all its turns, so a kill loses at most
the games in flight; a game whose backend failed for good is stored with status ``error`` and
is played again on the next run.

Every failure of the database itself (disk full, a damaged file, a server that cannot be
reached, a missing driver) is a :class:`StoreError` with a one-line message. Everything written
goes through :func:`_safe`, so no API key, URL credential or unencodable character is stored.
``Store(db, read_only=True)`` opens an existing SQLite file read-only and creates nothing
(reports and exports of an archived or shared database). The ``claims`` table lets several
processes run one study together: each game is claimed before it is played, a claim is kept
alive by a heartbeat, and the claims of a crashed process expire.
"""

from __future__ import annotations

import math
import os
import re
import socket
import time
import uuid
from urllib.parse import quote
from pathlib import Path
from typing import Any, Iterable

import sqlalchemy as sa

from ..core.table import TurnRecord
from ..models.base import Completion
from ..redact import redact


class StoreError(RuntimeError):
    """The database cannot be opened, read or written; the message says what to do."""

metadata = sa.MetaData()

studies = sa.Table(
    "studies",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("game", sa.String(100), nullable=False),
    sa.Column("spec", sa.JSON, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)

games = sa.Table(
    "games",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("study", sa.String(200), index=True, nullable=False),
    sa.Column("game", sa.String(100), nullable=False),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("seats", sa.JSON, nullable=False),  # role -> model name
    sa.Column("repeat", sa.Integer, nullable=False, default=0),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("prompt_version", sa.String(100), nullable=False, default=""),
    sa.Column("status", sa.String(20), nullable=False),  # done | error
    sa.Column("outcome", sa.JSON(none_as_null=True)),
    sa.Column("metrics", sa.JSON(none_as_null=True)),
    sa.Column("error", sa.Text),
    sa.Column("n_turns", sa.Integer, default=0),
    sa.Column("n_invalid", sa.Integer, default=0),
    sa.Column("source", sa.String(50), default="run"),  # run | import:<format>
    sa.Column("started", sa.Float),
    sa.Column("finished", sa.Float),
)

turns = sa.Table(
    "turns",
    metadata,
    sa.Column("game_id", sa.String(64), sa.ForeignKey("games.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True),
    sa.Column("role", sa.String(50), nullable=False),
    sa.Column("phase", sa.String(100)),
    sa.Column("messages", sa.JSON),
    sa.Column("raw", sa.Text),
    sa.Column("action", sa.JSON(none_as_null=True)),
    sa.Column("valid", sa.Boolean, nullable=False),
    sa.Column("retries", sa.Integer, default=0),
    sa.Column("error", sa.Text),
    sa.Column("prompt_tokens", sa.Integer, default=0),
    sa.Column("completion_tokens", sa.Integer, default=0),
    sa.Column("cost", sa.Float, default=0.0),
    sa.Column("latency", sa.Float, default=0.0),
    sa.Column("cached", sa.Boolean, default=False),
    sa.Column("metrics", sa.JSON(none_as_null=True)),
)

cache = sa.Table(
    "cache",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("identity", sa.String(300), nullable=False),
    sa.Column("response", sa.JSON, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)


claims = sa.Table(
    "claims",
    metadata,
    sa.Column("game_id", sa.String(64), primary_key=True),
    sa.Column("study", sa.String(200), nullable=False),
    sa.Column("owner", sa.String(64), nullable=False),
    sa.Column("heartbeat", sa.Float, nullable=False),
)

#: Seconds after its last heartbeat when a claim counts as abandoned (its process crashed).
CLAIM_TTL = 120.0


def _url(db: str | Path) -> str:
    db = str(db)
    return db if "://" in db else f"sqlite:///{db}"


def _problem(exc: BaseException) -> str:
    """The first line of a database error, without SQL, parameters or secrets."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip().splitlines()
    return redact(text[0] if text else type(exc).__name__)


#: Errors of the database layer (SQLAlchemy's, the driver's, the file system's, a value the
#: database cannot hold).
DB_ERRORS = (sa.exc.SQLAlchemyError, OSError, OverflowError, ImportError)


class Store:
    def __init__(self, db: str | Path, read_only: bool = False) -> None:
        url = _url(db)
        self.read_only = read_only
        shown = redact(str(db))
        if url.startswith("sqlite:///"):
            path = Path(url[len("sqlite:///") :]).expanduser()
            if path.is_dir():
                raise StoreError(f"database {shown} is a folder, not a file")
            if read_only:
                if not path.is_file():
                    raise StoreError(f"database not found: {shown}")
                # A WAL database needs its -wal/-shm files, which SQLite would create. With no
                # -wal file nobody is writing, and ``immutable`` reads the file as it is.
                live = Path(f"{path}-wal").exists()
                url = f"sqlite:///file:{quote(str(path.resolve()))}?{'mode=ro' if live else 'immutable=1'}&uri=true"
            else:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(f"cannot create the folder of database {shown}: {exc.strerror or exc}") from None
        try:
            self.engine = sa.create_engine(url, future=True)
            if self.engine.dialect.name == "sqlite":
                sa.event.listen(self.engine, "connect", _sqlite_pragmas_ro if read_only else _sqlite_pragmas)
            if read_only:
                missing = {"studies", "games", "turns"} - set(sa.inspect(self.engine).get_table_names())
                if missing:
                    raise StoreError(f"{shown} is not an agorabench database (no table {sorted(missing)[0]})")
            else:
                _create_tables(self.engine)
        except StoreError:
            raise
        except (ImportError, sa.exc.NoSuchModuleError) as exc:
            raise StoreError(f"cannot open database {shown}: its driver is not installed ({_problem(exc)}); for PostgreSQL: pip install psycopg") from None
        except sa.exc.ArgumentError as exc:
            raise StoreError(f"cannot open database {shown}: not a SQLite path or database URL ({_problem(exc)})") from None
        except DB_ERRORS as exc:
            raise StoreError(f"cannot open database {shown}: {_problem(exc)} (is it a database file, complete, and is the server reachable?)") from None

    # studies ---------------------------------------------------------------
    def save_study(self, name: str, game: str, spec: dict[str, Any]) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.delete(studies).where(studies.c.name == name))
                conn.execute(sa.insert(studies).values(name=name, game=game, spec=_safe(spec), created=time.time()))
        except DB_ERRORS as exc:
            raise StoreError(f"could not store study {name!r}: {_problem(exc)}") from None

    # games -----------------------------------------------------------------
    def done_ids(self, study: str) -> set[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(games.c.id).where(games.c.study == study, games.c.status == "done"))
            return {r[0] for r in rows}

    def save_game(
        self,
        *,
        id: str,
        study: str,
        game: str,
        config: dict[str, Any],
        seats: dict[str, str],
        repeat: int,
        seed: int,
        prompt_version: str,
        status: str,
        outcome: dict[str, Any] | None,
        metrics: dict[str, float] | None,
        error: str | None,
        turn_records: Iterable[TurnRecord],
        started: float | None = None,
        source: str = "run",
    ) -> None:
        """Replace the game's row and turns in one transaction (redacted); StoreError if the
        database refuses it (disk full, a value it cannot hold)."""
        records = list(turn_records)
        try:
            self._save_game(id, study, game, config, seats, repeat, seed, prompt_version, status, outcome, metrics, error, records, started, source)
        except DB_ERRORS as exc:
            raise StoreError(f"could not store game {id}: {_problem(exc)}") from None

    def _save_game(self, id, study, game, config, seats, repeat, seed, prompt_version, status, outcome, metrics, error, records, started, source) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.delete(turns).where(turns.c.game_id == id))
            conn.execute(sa.delete(games).where(games.c.id == id))
            conn.execute(
                sa.insert(games).values(
                    id=id,
                    study=study,
                    game=game,
                    config=config,
                    seats=seats,
                    repeat=repeat,
                    seed=seed,
                    prompt_version=prompt_version,
                    status=status,
                    outcome=_safe(_jsonable(outcome)),
                    metrics=_jsonable(metrics),
                    error=_safe(error),
                    n_turns=len(records),
                    n_invalid=sum(1 for t in records if not t.valid),
                    source=source,
                    started=started,
                    finished=time.time(),
                )
            )
            if records:
                conn.execute(
                    sa.insert(turns),
                    [
                        {
                            "game_id": id,
                            "idx": t.index,
                            "role": t.role,
                            "phase": t.phase,
                            "messages": _safe(t.messages),
                            "raw": _safe(t.raw),
                            "action": _safe(_jsonable(t.action)),
                            "valid": t.valid,
                            "retries": t.retries,
                            "error": _safe(t.error),
                            "prompt_tokens": t.prompt_tokens,
                            "completion_tokens": t.completion_tokens,
                            "cost": t.cost,
                            "latency": t.latency,
                            "cached": t.cached,
                            "metrics": _jsonable(t.metrics),
                        }
                        for t in records
                    ],
                )

    def games(self, study: str | None = None) -> list[dict[str, Any]]:
        q = sa.select(games).order_by(games.c.id)
        if study is not None:
            q = q.where(games.c.study == study)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def turns(self, study: str | None = None, game_id: str | None = None) -> list[dict[str, Any]]:
        q = sa.select(turns, games.c.study).join(games, games.c.id == turns.c.game_id).order_by(turns.c.game_id, turns.c.idx)
        if study is not None:
            q = q.where(games.c.study == study)
        if game_id is not None:
            q = q.where(turns.c.game_id == game_id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    # claims ------------------------------------------------------------------
    def claim(self, game_id: str, study: str, owner: str, ttl: float = CLAIM_TTL) -> bool:
        """Claim a game for ``owner``; False if another live process holds it. A claim whose
        heartbeat is older than ``ttl`` seconds, or whose owner was a process of this machine
        that is gone (killed), is taken over. Portable: an insert that fails on the primary key,
        then a conditional update, each in its own transaction."""
        now = time.time()
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(claims).values(game_id=game_id, study=study, owner=owner, heartbeat=now))
            return True
        except sa.exc.IntegrityError:
            pass
        with self.engine.begin() as conn:
            holder = conn.execute(sa.select(claims.c.owner).where(claims.c.game_id == game_id)).scalar()
            stale = claims.c.heartbeat < now - ttl
            if holder is not None and _owner_gone(holder):
                stale = sa.or_(stale, claims.c.owner == holder)
            taken = conn.execute(
                sa.update(claims)
                .where(claims.c.game_id == game_id, sa.or_(claims.c.owner == owner, stale))
                .values(owner=owner, study=study, heartbeat=now)
            )
            return taken.rowcount == 1

    def heartbeat(self, owner: str) -> None:
        """Keep ``owner``'s claims alive."""
        with self.engine.begin() as conn:
            conn.execute(sa.update(claims).where(claims.c.owner == owner).values(heartbeat=time.time()))

    def release(self, game_id: str, owner: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.delete(claims).where(claims.c.game_id == game_id, claims.c.owner == owner))

    def is_done(self, game_id: str) -> bool:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(games.c.id).where(games.c.id == game_id, games.c.status == "done")).first() is not None

    def studies(self) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.select(studies))]

    def dispose(self) -> None:
        self.engine.dispose()


class SQLCache:
    """Response cache in a store's ``cache`` table (implements ``ResponseCache``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> Completion | None:
        try:
            with self.store.engine.connect() as conn:
                row = conn.execute(sa.select(cache.c.response).where(cache.c.key == key)).first()
        except DB_ERRORS as exc:
            raise StoreError(f"could not read the response cache: {_problem(exc)}") from None
        if row is None:
            return None
        r = row[0]
        return Completion(text=r["text"], prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"], latency=r["latency"], finish_reason=r["finish_reason"])

    def put(self, key: str, identity: str, c: Completion) -> None:
        response = {"text": c.text, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "latency": c.latency, "finish_reason": c.finish_reason}
        try:
            with self.store.engine.begin() as conn:
                conn.execute(sa.delete(cache).where(cache.c.key == key))
                conn.execute(sa.insert(cache).values(key=key, identity=redact(identity), response=_safe(response), created=time.time()))
        except DB_ERRORS as exc:
            raise StoreError(f"could not write the response cache: {_problem(exc)}") from None


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")  # first: another process may hold the file
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


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


def claim_owner() -> str:
    """This process's name on its claims: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _owner_gone(owner: str) -> bool:
    """Whether a claim's owner was a process of this machine that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False


def _sqlite_pragmas_ro(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def _safe(value: Any) -> Any:
    """What may be written: secrets redacted, and lone surrogates and NUL (which neither UTF-8
    nor PostgreSQL text can hold) replaced by U+FFFD, in every string of a JSON-like value."""
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", redact(value))
    if isinstance(value, dict):
        return {_safe(k): _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf become null, tuples lists, numpy scalars Python numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return _jsonable(value.item())
    return str(value)
