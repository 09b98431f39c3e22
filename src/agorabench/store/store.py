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

:class:`GameWriter` groups the games that finish close together
into one transaction (group commit); a game counts as in flight until its group is committed.

Storage grows linearly with a game's length: each role's messages are stored once per game
(table ``transcripts``, one JSON list per game and role), and a turn stores only where its prompt
lies in that list (``msg_start``, ``msg_count``). :meth:`Store.turn_messages` and
:meth:`Store.turns` give back every turn's full prompt. Databases written before this layout
(a ``turns.messages`` column) are refused with a message naming ``agora migrate DB``, which
rewrites them in place (:func:`migrate`).
"""

from __future__ import annotations

import collections
import contextlib
import gc
import hashlib
import json
import math
import os
import re
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import quote

import orjson
import sqlalchemy as sa

from ..models.base import Completion
from ..records import GameRecord, Record, StudyRecord, TurnRecord
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
    sa.Column("msg_start", sa.Integer),  # the prompt is transcripts[game_id, role][msg_start : msg_start + msg_count]
    sa.Column("msg_count", sa.Integer),
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

transcripts = sa.Table(
    "transcripts",
    metadata,
    sa.Column("game_id", sa.String(64), sa.ForeignKey("games.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("role", sa.String(50), primary_key=True),
    sa.Column("messages", sa.JSON, nullable=False),  # every message the role's turns were shown, each once
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

#: Every seating a study was run with (the models, their matchups and seats, as one JSON value),
#: once per distinct value: reports and exports re-expand the study file's current grid with each
#: of them, so games played with ``--model`` or from the dashboard count as part of its design.
study_runs = sa.Table(
    "study_runs",
    metadata,
    sa.Column("study", sa.String(200), primary_key=True),
    sa.Column("key", sa.String(64), primary_key=True),  # SHA-256 of the seating's sorted-key JSON
    sa.Column("seating", sa.JSON, nullable=False),
    sa.Column("first", sa.Float, nullable=False),
    sa.Column("last", sa.Float, nullable=False),
)

#: Seconds after its last heartbeat when a claim counts as abandoned (its process crashed).
CLAIM_TTL = 120.0


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


def _problem(exc: BaseException) -> str:
    """The first line of a database error, without SQL, parameters or secrets."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip().splitlines()
    return redact(text[0] if text else type(exc).__name__)


#: Errors of the database layer (SQLAlchemy's, the driver's, the file system's, a value the
#: database cannot hold).
DB_ERRORS = (sa.exc.SQLAlchemyError, OSError, OverflowError, ImportError)


#: Words of SQLite's errors that mean the file itself is damaged (pages, or text that is not UTF-8).
DAMAGE_SIGNS = ("malformed", "could not decode", "database corrupt", "integrity check")


def is_damage(detail: str) -> bool:
    """Whether a database error's text says the file is damaged."""
    text = detail.lower()
    return any(sign in text for sign in DAMAGE_SIGNS)


def damaged(db: str, detail: str) -> StoreError:
    """The one-line error for a damaged SQLite file: what is wrong and what to do."""
    first = (detail.strip().splitlines() or ["failed the integrity check"])[0]
    return StoreError(f"database file is damaged: {db}: {redact(first)} (restore a copy, or rebuild it: `sqlite3 {db} .recover | sqlite3 recovered.db`)")


class StoreFormatError(StoreError):
    """The database was written in an older layout; the message says what to do."""


def layout(records: Iterable[TurnRecord]) -> tuple[dict[str, list[dict[str, str]]], list[tuple[int, int]]]:
    """Each role's messages stored once, and every turn's prompt as ``(start, count)`` in them.

    A role's turns usually see one growing transcript, so turn k's prompt is a prefix of turn
    k+1's and the role's list is simply the longest prompt. A prompt that neither extends nor
    repeats the current run of messages (a game that reset a role's transcript) starts a new run
    at the end of the list, so any sequence of prompts is stored exactly, at worst in full.
    """
    stored: dict[str, list[dict[str, str]]] = {}
    runs: dict[str, tuple[int, list[dict[str, str]]]] = {}  # role -> (start, current run)
    spans: list[tuple[int, int]] = []
    for t in records:
        msgs = list(t.messages or [])
        role_list = stored.setdefault(t.role, [])
        start, run = runs.get(t.role, (0, []))
        n, m = len(run), len(msgs)
        if m >= n and msgs[:n] == run:  # extends (or equals) the current run
            role_list.extend(msgs[n:])
            runs[t.role] = (start, msgs)
        elif m < n and run[:m] == msgs:  # repeats a prefix of it
            pass
        else:  # a new run
            start = len(role_list)
            role_list.extend(msgs)
            runs[t.role] = (start, msgs)
        spans.append((start, m))
    return stored, spans


def game_rows(
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
    finished: float | None = None,
) -> dict[str, Any]:
    """A finished game as the rows :meth:`Store.save_games` writes (game, transcripts, turns)."""
    records = list(turn_records)
    stored, spans = layout(records)
    return {
        "game": {
            "id": id,
            "study": study,
            "game": game,
            "config": config,
            "seats": seats,
            "repeat": repeat,
            "seed": seed,
            "prompt_version": prompt_version,
            "status": status,
            "outcome": _safe(outcome),
            "metrics": metrics,
            "error": _safe(error),
            "n_turns": len(records),
            "n_invalid": sum(1 for t in records if not t.valid),
            "source": source,
            "started": started,
            "finished": finished if finished is not None else time.time(),
        },
        "transcripts": [{"game_id": id, "role": role, "messages": _safe(msgs)} for role, msgs in stored.items() if msgs],
        "turns": [
            {
                "game_id": id,
                "idx": t.index,
                "role": t.role,
                "phase": t.phase,
                "msg_start": start,
                "msg_count": count,
                "raw": _safe(t.raw),
                "action": _safe(t.action),
                "valid": t.valid,
                "retries": t.retries,
                "error": _safe(t.error),
                "prompt_tokens": t.prompt_tokens,
                "completion_tokens": t.completion_tokens,
                "cost": t.cost,
                "latency": t.latency,
                "cached": t.cached,
                "metrics": t.metrics,
            }
            for t, (start, count) in zip(records, spans)
        ],
    }


class Store:
    def __init__(self, db: str | Path, read_only: bool = False, check_format: bool = True, check_integrity: bool = True) -> None:
        """Open (or create) the database. An existing SQLite file must pass SQLite's quick
        integrity check (``check_integrity``), so that a damaged file is named as such instead of
        read in part."""
        url = _url(db)
        self.read_only = read_only
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
                # A WAL database needs its -wal/-shm files, which SQLite would create. With no
                # -wal file nobody is writing, and ``immutable`` reads the file as it is.
                live = Path(f"{path}-wal").exists()
                url = f"sqlite:///file:{quote(str(path.resolve()))}?{'mode=ro' if live else 'immutable=1'}&uri=true"
            else:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(f"cannot create the folder of database {shown}: {exc.strerror or exc}") from None
        self.db = str(db)
        try:
            self.engine = sa.create_engine(url, future=True, json_serializer=_dumps, json_deserializer=_loads)
            if self.engine.dialect.name == "sqlite":
                sa.event.listen(self.engine, "connect", _sqlite_pragmas_ro if read_only else _sqlite_pragmas)
            if existing:
                self._check_integrity(shown)
            if check_format and self.legacy_layout():
                raise StoreFormatError(f"{shown} stores every turn's whole prompt (the layout before per-role transcripts); upgrade it in place with `agora migrate {shown}`")
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
            if is_damage(_problem(exc)):
                raise damaged(shown, _problem(exc)) from None
            raise StoreError(f"cannot open database {shown}: {_problem(exc)} (is it a database file, complete, and is the server reachable?)") from None

    def _check_integrity(self, shown: str) -> None:
        """StoreError naming the first problem when SQLite's ``quick_check`` finds any (pages and
        indexes that do not fit together; linear in the file's size, about 0.1 s for 30 MB)."""
        with self.engine.connect() as conn:
            rows = [r[0] for r in conn.exec_driver_sql("PRAGMA quick_check(5)")]
        if rows != ["ok"]:
            raise damaged(shown, " ".join(str(r) for r in rows).replace("*** in database main ***", "").strip())

    def legacy_layout(self) -> bool:
        """Whether the database has the old ``turns.messages`` column (see :func:`migrate`)."""
        inspector = sa.inspect(self.engine)
        return inspector.has_table("turns") and "messages" in {c["name"] for c in inspector.get_columns("turns")}

    # studies ---------------------------------------------------------------
    def save_study(self, name: str, game: str, spec: dict[str, Any]) -> None:
        """Replace the study's row. Several processes starting one study at once (Ray shares, two
        runs) may race: a replace that meets another's fresh row is tried again."""
        for attempt in range(5):
            try:
                with self.engine.begin() as conn:
                    conn.execute(sa.delete(studies).where(studies.c.name == name))
                    conn.execute(sa.insert(studies).values(name=name, game=game, spec=_safe(spec), created=time.time()))
                return
            except sa.exc.IntegrityError as exc:
                if attempt == 4:
                    raise StoreError(f"could not store study {name!r}: {_problem(exc)}") from None
                time.sleep(0.05 * (attempt + 1))
            except DB_ERRORS as exc:
                raise StoreError(f"could not store study {name!r}: {_problem(exc)}") from None

    def record_run(self, study: str, seating: dict[str, Any]) -> None:
        """Remember that ``study`` was run with ``seating`` (one row per distinct seating; a run
        with a seating already recorded only updates its ``last`` time)."""
        value = _safe(seating)
        key = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
        now = time.time()
        for attempt in range(5):
            try:
                with self.engine.begin() as conn:
                    done = conn.execute(sa.update(study_runs).where(study_runs.c.study == study, study_runs.c.key == key).values(last=now)).rowcount
                    if not done:
                        conn.execute(sa.insert(study_runs).values(study=study, key=key, seating=value, first=now, last=now))
                return
            except sa.exc.IntegrityError as exc:  # another process recorded the same seating just now
                if attempt == 4:
                    raise StoreError(f"could not record the run of study {study!r}: {_problem(exc)}") from None
                time.sleep(0.05 * (attempt + 1))
            except DB_ERRORS as exc:
                raise StoreError(f"could not record the run of study {study!r}: {_problem(exc)}") from None

    def recorded_runs(self, study: str) -> list[dict[str, Any]]:
        """The seatings ``study`` was run with, oldest first; none in a database written before
        runs were recorded (it has no ``study_runs`` table, and a read-only store creates none)."""
        if not sa.inspect(self.engine).has_table("study_runs"):
            return []
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(study_runs.c.seating).where(study_runs.c.study == study).order_by(study_runs.c.first, study_runs.c.key))
            return [r[0] for r in rows]

    # games -----------------------------------------------------------------
    def done_ids(self, study: str) -> set[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(games.c.id).where(games.c.study == study, games.c.status == "done"))
            return {r[0] for r in rows}

    def save_game(self, **fields: Any) -> None:
        """Replace the game's row, transcripts and turns in one transaction (fields: :func:`game_rows`)."""
        self.save_games([game_rows(**fields)])

    def save_records(self, records: Iterable[Record]) -> tuple[int, list[str]]:
        """Store what an importer yields (:mod:`agorabench.records`); returns (games stored,
        problems). A study record's ``spec["games"]`` is merged with the games already stored
        for that study."""
        count, problems = 0, []
        for record in records:
            if isinstance(record, str):
                problems.append(record)
            elif isinstance(record, GameRecord):
                self.save_game(**record.fields)
                count += 1
            elif isinstance(record, StudyRecord):
                spec = dict(record.spec)
                game = record.game
                if "games" in spec:
                    names = sorted(set(spec["games"]) | {g["game"] for g in self.games(record.name)})
                    spec["games"] = names
                    game = names[0] if len(names) == 1 else (record.family or record.game)
                self.save_study(record.name, game, spec)
            else:
                raise TypeError(f"an importer yielded {type(record).__name__}, not a record")
        return count, problems

    def save_games(self, batch: list[dict[str, Any]]) -> None:
        """Write several finished games (from :func:`game_rows`) in one transaction, replacing
        earlier rows of the same ids (a game that ended in an error and was played again)."""
        if not batch:
            return
        ids = [g["game"]["id"] for g in batch]
        try:
            self._save_games(ids, batch)
        except DB_ERRORS as exc:
            raise StoreError(f"could not store game {ids[0] if len(ids) == 1 else f'{ids[0]} (and {len(ids) - 1} more)'}: {_problem(exc)}") from None

    def _save_games(self, ids: list[str], batch: list[dict[str, Any]]) -> None:
        with self.engine.begin() as conn:
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                conn.execute(sa.delete(turns).where(turns.c.game_id.in_(chunk)))
                conn.execute(sa.delete(transcripts).where(transcripts.c.game_id.in_(chunk)))
                conn.execute(sa.delete(games).where(games.c.id.in_(chunk)))
            conn.execute(sa.insert(games), [g["game"] for g in batch])
            rows = [r for g in batch for r in g["transcripts"]]
            if rows:
                conn.execute(sa.insert(transcripts), rows)
            rows = [r for g in batch for r in g["turns"]]
            if rows:
                conn.execute(sa.insert(turns), rows)

    def games(self, study: str | None = None) -> list[dict[str, Any]]:
        q = sa.select(games).order_by(games.c.id)
        if study is not None:
            q = q.where(games.c.study == study)
        with self.engine.connect() as conn:
            return _dicts(conn.execute(q))

    def game_ids(self, study: str) -> set[str]:
        """The ids of the study's stored games (any status)."""
        with self.engine.connect() as conn:
            return set(conn.execute(sa.select(games.c.id).where(games.c.study == study)).scalars())

    def turns(self, study: str | None = None, game_id: str | None = None, messages: bool = True) -> list[dict[str, Any]]:
        """Turn rows in game and turn order; ``messages`` holds each turn's full prompt unless
        ``messages=False`` (then only ``msg_start`` / ``msg_count``)."""
        q = sa.select(turns, games.c.study).join(games, games.c.id == turns.c.game_id).order_by(turns.c.game_id, turns.c.idx)
        tq = sa.select(transcripts.c.game_id, transcripts.c.role, transcripts.c.messages).join(games, games.c.id == transcripts.c.game_id)
        if study is not None:
            q, tq = q.where(games.c.study == study), tq.where(games.c.study == study)
        if game_id is not None:
            q, tq = q.where(turns.c.game_id == game_id), tq.where(transcripts.c.game_id == game_id)
        with self.engine.connect() as conn:
            rows = _dicts(conn.execute(q))
            if messages:
                stored = {(g, role): msgs for g, role, msgs in conn.execute(tq)}
                for r in rows:
                    r["messages"] = _span(stored.get((r["game_id"], r["role"])), r["msg_start"], r["msg_count"])
        return rows

    def turn_columns(self, study: str | None = None) -> dict[str, list[Any]]:
        """The turns (no prompts, no raw answers) as columns, name -> values in game and turn
        order, JSON columns decoded: the read of large analyses (no dict per row)."""
        q = sa.select(*_as_text([c for c in turns.c if c.name != "raw"])).join(games, games.c.id == turns.c.game_id).order_by(turns.c.game_id, turns.c.idx)
        return self._columns(q if study is None else q.where(games.c.study == study), turns)

    def game_columns(self, study: str | None = None) -> dict[str, list[Any]]:
        """The games as columns (as :meth:`turn_columns`), in id order."""
        q = sa.select(*_as_text(list(games.c))).order_by(games.c.id)
        return self._columns(q if study is None else q.where(games.c.study == study), games)

    def _columns(self, q: sa.Select, table: sa.Table) -> dict[str, list[Any]]:
        with _no_cycle_collection():
            with self.engine.connect() as conn:
                result = conn.execute(q)
                names = list(result.keys())
                # the driver's rows straight from its cursor (a Row object per row took a third
                # of the read over 10^5 games); each column's result processor, the one
                # SQLAlchemy would apply (e.g. SQLite's 0/1 to bool), then runs once per column
                kinds = [d[1] for d in result.cursor.description]
                processors = [c.type.dialect_impl(conn.dialect).result_processor(conn.dialect, k) for c, k in zip(q.selected_columns, kinds)]
                rows = result.cursor.fetchall()
            data = {n: list(v) for n, v in zip(names, zip(*rows))} if rows else {n: [] for n in names}
            del rows
            for n, process in zip(names, processors):
                if process is not None:
                    data[n] = [process(v) for v in data[n]]
            for n in names:
                if isinstance(table.c[n].type, sa.JSON):
                    data[n] = [v if v is None or not isinstance(v, (str, bytes)) else _loads(v) for v in data[n]]
        return data

    def turn_messages(self, game_id: str, idx: int) -> list[dict[str, str]]:
        """The full prompt (chat messages) that turn ``idx`` of a game was shown; KeyError if
        there is no such turn."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(turns.c.role, turns.c.msg_start, turns.c.msg_count).where(turns.c.game_id == game_id, turns.c.idx == idx)).first()
            if row is None:
                raise KeyError(f"no turn {idx} in game {game_id!r}")
            msgs = conn.execute(sa.select(transcripts.c.messages).where(transcripts.c.game_id == game_id, transcripts.c.role == row.role)).scalar()
        return _span(msgs, row.msg_start, row.msg_count)

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

    def claim_many(self, game_ids: list[str], study: str, owner: str, ttl: float = CLAIM_TTL) -> set[str]:
        """Claim several games at once; returns the ids now held by ``owner``. The games nobody
        holds are claimed in one transaction (a run claims its games in batches, not one
        round trip each); a game someone holds, or a batch that met a concurrent claimer, goes
        through :meth:`claim` one by one (takeover of stale and dead owners' claims)."""
        if not game_ids:
            return set()
        now = time.time()
        try:
            with self.engine.begin() as conn:
                held = {g for g, in conn.execute(sa.select(claims.c.game_id).where(claims.c.game_id.in_(game_ids)))}
                free = [g for g in game_ids if g not in held]
                if free:
                    conn.execute(sa.insert(claims), [{"game_id": g, "study": study, "owner": owner, "heartbeat": now} for g in free])
        except sa.exc.IntegrityError:  # another process claimed some of them meanwhile
            return {g for g in game_ids if self.claim(g, study, owner, ttl)}
        return set(free) | {g for g in game_ids if g in held and self.claim(g, study, owner, ttl)}

    def done_among(self, game_ids: list[str]) -> set[str]:
        """Which of these games are stored as done."""
        if not game_ids:
            return set()
        with self.engine.connect() as conn:
            return set(conn.execute(sa.select(games.c.id).where(games.c.id.in_(game_ids), games.c.status == "done")).scalars())

    def release_many(self, game_ids: list[str], owner: str) -> None:
        if game_ids:
            with self.engine.begin() as conn:
                conn.execute(sa.delete(claims).where(claims.c.game_id.in_(game_ids), claims.c.owner == owner))

    def heartbeat(self, owner: str) -> None:
        """Keep ``owner``'s claims alive."""
        with self.engine.begin() as conn:
            conn.execute(sa.update(claims).where(claims.c.owner == owner).values(heartbeat=time.time()))

    def release_all(self, owner: str) -> None:
        """Drop every claim of ``owner`` (at the end of its run, once its games are stored)."""
        with self.engine.begin() as conn:
            conn.execute(sa.delete(claims).where(claims.c.owner == owner))

    def release_tag(self, tag: str) -> int:
        """Drop the claims of every owner named with ``tag`` (:func:`claim_owner`), on any host:
        an executor's earlier attempt at the same share, known to be dead. Returns how many."""
        with self.engine.begin() as conn:
            return conn.execute(sa.delete(claims).where(claims.c.owner.endswith(":" + tag, autoescape=True))).rowcount

    def game_transcripts(self, game: str, study: str | None = None) -> Iterator[tuple[str, str, dict[str, Any], str, dict[str, list[dict[str, str]]]]]:
        """(id, study, config, prompt version, messages by role) of every stored game of kind
        ``game`` (of one study if given), one game at a time."""
        q = sa.select(games.c.id, games.c.study, games.c.config, games.c.prompt_version).where(games.c.game == game).order_by(games.c.id)
        if study is not None:
            q = q.where(games.c.study == study)
        with self.engine.connect() as conn:
            rows = conn.execute(q).all()
            for gid, name, config, version in rows:
                roles = {r: m for r, m in conn.execute(sa.select(transcripts.c.role, transcripts.c.messages).where(transcripts.c.game_id == gid))}
                yield gid, name, config, version, roles

    def forget_games(self, game_ids: list[str]) -> int:
        """Delete these games with their turns, transcripts and claims (the next run plays them
        again); the number of games deleted."""
        n = 0
        with self.engine.begin() as conn:
            for start in range(0, len(game_ids), 500):
                chunk = game_ids[start : start + 500]
                for table in (turns, transcripts, claims):
                    conn.execute(sa.delete(table).where(table.c.game_id.in_(chunk)))
                n += conn.execute(sa.delete(games).where(games.c.id.in_(chunk))).rowcount
        return n

    def studies(self) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.select(studies))]

    def dispose(self) -> None:
        self.engine.dispose()


def _span(stored: list[dict[str, str]] | None, start: int | None, count: int | None) -> list[dict[str, str]]:
    if not stored or not count:
        return []
    return stored[start or 0 : (start or 0) + count]


class GameWriter:
    """Group commit for finished games, with the same ``save_game`` call as :class:`Store`.

    Outside :meth:`grouped` every game is written at once (a game played on its own, e.g. by the
    web app, is in the store when ``save_game`` returns). Inside it, games are written together
    when ``batch`` of them wait or the oldest has waited ``interval`` seconds, by :meth:`flush`
    (which the runner also calls periodically, through :meth:`commit`), and when the block ends. A
    game is in flight until its group is committed: a kill loses at most the games being played
    and those finished within the last ``interval``, and a resume plays exactly those again.
    ``before_commit`` runs first (the runner flushes the response cache there, so every stored
    game's answers are in the cache).

    With :meth:`write_in_background` (the runner's choice for file and server databases), a
    group inside :meth:`grouped` is written on a worker thread: the games and the cache's
    buffered answers are taken on the caller's thread, then written there, answers first, while
    the event loop goes on reading responses. One group is written at a time (a group that is
    due while the previous one is still being written waits for it, so groups are the same as
    without the thread); a failed write raises its ``StoreError`` at the next ``save_game``,
    :meth:`commit` or :meth:`flush`.
    """

    def __init__(self, store: Store, batch: int = 256, interval: float = 0.5, before_commit: Callable[[], None] | None = None) -> None:
        self.store = store
        self.batch = batch
        self.interval = interval
        self.before_commit = before_commit
        self._pending: list[dict[str, Any]] = []
        self._oldest = 0.0
        self._grouping = 0
        self._cache: SQLCache | None = None
        self._background = False
        self._executor: Any = None
        self._future: Any = None
        #: Games whose transaction committed, by status: what a run's closing line counts.
        self.committed: collections.Counter[str] = collections.Counter()

    def write_in_background(self, cache: SQLCache | None) -> bool:
        """Write groups on a worker thread from now on, ``cache``'s buffered answers first (the
        cache then leaves its writing to this writer). False, and nothing changes, where a
        second thread would not see the same database (SQLite in memory)."""
        stores = [self.store] + ([cache.store] if cache is not None else [])
        if any(isinstance(st.engine.pool, sa.pool.SingletonThreadPool) for st in stores):
            return False
        self._background, self._cache = True, cache
        if cache is not None:
            cache.auto_flush = False
        return True

    @contextlib.contextmanager
    def grouped(self) -> Iterator[GameWriter]:
        """Group the games saved inside the block; whatever waits is written when it ends."""
        self._grouping += 1
        try:
            yield self
        finally:
            self._grouping -= 1
            try:
                self.flush()
            finally:
                if not self._grouping:
                    if self._executor is not None:
                        self._executor.shutdown(wait=True)
                        self._executor = None
                    # background writing lasts one block: the cache flushes by itself again
                    if self._cache is not None:
                        self._cache.auto_flush = True
                    self._background, self._cache = False, None

    def save_game(self, **fields: Any) -> None:
        if not self._pending:
            self._oldest = time.monotonic()
        self._pending.append(game_rows(**fields))
        if not self._grouping or len(self._pending) >= self.batch or time.monotonic() - self._oldest >= self.interval:
            if self._threaded():
                self._wait()
                self._submit()
            else:
                self.flush()

    def due(self) -> bool:
        """Whether the oldest waiting game has waited ``interval`` seconds (or, writing in the
        background, ``batch`` answers wait in the cache)."""
        if self._pending and time.monotonic() - self._oldest >= self.interval:
            return True
        return self._threaded() and self._cache is not None and self._cache.waiting() >= self.batch

    def commit(self) -> None:
        """Write what waits: on the worker thread when writing in the background (if a write is
        still running, a later call takes the rest), else at once."""
        if not self._threaded():
            self.flush()
            return
        if self._future is not None and not self._future.done():
            return
        self._wait()
        self._submit()

    def flush(self) -> None:
        """Write everything that waits, here and now (after the background write, if any)."""
        self._wait()
        if self.before_commit is not None:
            self.before_commit()
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        self.store.save_games(pending)
        self._count(pending)

    def _count(self, batch: list[dict[str, Any]]) -> None:
        """Count a batch whose transaction committed (``Counter`` updates are atomic enough for
        the one writer thread and the loop's reads of a total)."""
        self.committed.update(row["game"]["status"] for row in batch)

    def _threaded(self) -> bool:
        return self._background and self._grouping > 0

    def _submit(self) -> None:
        answers = self._cache.take() if self._cache is not None else []
        games, self._pending = self._pending, []
        if not games and not answers:
            return
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agorabench-writer")
        self._future = self._executor.submit(self._write, answers, games)

    def _write(self, answers: list[dict[str, Any]], games: list[dict[str, Any]]) -> None:
        if answers:
            self._cache.write(answers)  # type: ignore[union-attr]
        if games:
            self.store.save_games(games)
            self._count(games)

    def _wait(self) -> None:
        """Wait for the background write; raise its error."""
        future, self._future = self._future, None
        if future is not None:
            future.result()

    def __len__(self) -> int:
        return len(self._pending)


def migrate(db: str | Path) -> int:
    """Rewrite a database of the old layout (each turn holding its whole prompt in
    ``turns.messages``) into per-role transcripts plus spans, in place and in one transaction;
    SQLite files are vacuumed afterwards to return the space. Returns the number of games
    rewritten (0 when the database already has the current layout)."""
    store = Store(db, check_format=False)
    try:
        if not store.legacy_layout():
            metadata.create_all(store.engine)
            return 0
        metadata.create_all(store.engine)  # adds the transcripts table
        old = sa.table("turns", sa.column("game_id"), sa.column("idx"), sa.column("role"), sa.column("messages", sa.JSON))
        n = 0
        with store.engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE turns ADD COLUMN msg_start INTEGER"))
            conn.execute(sa.text("ALTER TABLE turns ADD COLUMN msg_count INTEGER"))
            ids = conn.execute(sa.select(old.c.game_id).distinct()).scalars().all()
            select = sa.select(old.c.idx, old.c.role, old.c.messages).where(old.c.game_id == sa.bindparam("g")).order_by(old.c.idx)
            update = sa.update(turns).where(turns.c.game_id == sa.bindparam("g"), turns.c.idx == sa.bindparam("i")).values(msg_start=sa.bindparam("s"), msg_count=sa.bindparam("c"))
            for game_id in ids:  # one game at a time: a big database never sits in memory
                group = conn.execute(select, {"g": game_id}).all()
                stored, spans = layout([_Prompt(role, msgs or []) for _, role, msgs in group])
                if any(stored.values()):
                    conn.execute(sa.insert(transcripts), [{"game_id": game_id, "role": role, "messages": msgs} for role, msgs in stored.items() if msgs])
                conn.execute(update, [{"g": game_id, "i": idx, "s": s, "c": c} for (idx, _, _), (s, c) in zip(group, spans)])
                n += 1
            conn.execute(sa.text("ALTER TABLE turns DROP COLUMN messages"))
        if store.engine.dialect.name == "sqlite":
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(sa.text("VACUUM"))
        return n
    finally:
        store.dispose()


@dataclass
class _Prompt:
    """The two fields of a turn that :func:`layout` reads."""

    role: str
    messages: list[dict[str, str]]


class SQLCache:
    """Response cache in a store's ``cache`` table (implements ``ResponseCache``).

    - Lookups: the keys already in the table are read once (as 64-bit prefixes, up to
      ``index_limit`` of them), so a key that is not there costs no query. Answers written later
      by another process are not seen; that costs at most a repeated call, never a wrong answer.
    - Writes are buffered and written in one transaction by :meth:`flush`, which the runner
      calls before it stores a finished game (and which runs by itself every ``batch`` answers):
      every stored game's answers are in the cache, and a kill loses only answers of games still
      in flight, which a resume asks again.
    """

    def __init__(self, store: Store, batch: int = 256, index_limit: int = 2_000_000) -> None:
        self.store = store
        self.batch = batch
        self.index_limit = index_limit
        #: Whether :meth:`put` flushes by itself every ``batch`` answers (off when a
        #: :class:`GameWriter` writes them in the background).
        self.auto_flush = True
        self._pending: dict[str, dict[str, Any]] = {}
        self._writing: dict[str, dict[str, Any]] = {}  # taken for a background write, not yet written
        self._known: set[int] | None = None
        self._indexed = False
        self._select = sa.select(cache.c.response).where(cache.c.key == sa.bindparam("k"))

    def _index(self) -> None:
        self._indexed = True
        known: set[int] = set()
        with self.store.engine.connect() as conn:
            for (key,) in conn.execute(sa.select(cache.c.key).execution_options(yield_per=50_000)):
                known.add(_prefix(key))
                if len(known) > self.index_limit:
                    return  # too many to hold: look every key up
        self._known = known

    def get(self, key: str) -> Completion | None:
        pending = self._pending.get(key) or self._writing.get(key)
        if pending is not None:
            r = pending["response"]
        else:
            try:
                if not self._indexed:
                    self._index()
                if self._known is not None and _prefix(key) not in self._known:
                    return None
                with self.store.engine.connect() as conn:
                    row = conn.execute(self._select, {"k": key}).first()
            except DB_ERRORS as exc:
                raise StoreError(f"could not read the response cache: {_problem(exc)}") from None
            if row is None:
                return None
            r = row[0]
        return Completion(text=r["text"], prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"], latency=r["latency"], finish_reason=r["finish_reason"])

    def put(self, key: str, identity: str, c: Completion) -> None:
        response = {"text": c.text, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "latency": c.latency, "finish_reason": c.finish_reason}
        self._pending[key] = {"key": key, "identity": redact(identity), "response": _safe(response), "created": time.time()}
        if self.auto_flush and len(self._pending) >= self.batch:
            self.flush()

    def waiting(self) -> int:
        """Answers buffered and not yet taken for writing."""
        return len(self._pending)

    def take(self) -> list[dict[str, Any]]:
        """The buffered answers, for :meth:`write` (on another thread); lookups still find them."""
        taken, self._pending = self._pending, {}
        self._writing.update(taken)
        return list(taken.values())

    def write(self, rows: list[dict[str, Any]]) -> None:
        """Write answers from :meth:`take` (replacing entries with the same key) in one
        transaction."""
        try:
            with self.store.engine.begin() as conn:
                conn.execute(sa.delete(cache).where(cache.c.key.in_([r["key"] for r in rows])))
                conn.execute(sa.insert(cache), rows)
        except DB_ERRORS as exc:
            raise StoreError(f"could not write the response cache: {_problem(exc)}") from None
        if self._known is not None:
            self._known.update(_prefix(r["key"]) for r in rows)
        for r in rows:
            if self._writing.get(r["key"]) is r:
                self._writing.pop(r["key"], None)

    def flush(self) -> None:
        """Write the buffered answers (replacing entries with the same key) in one transaction;
        if that fails they stay buffered."""
        rows = self.take()
        if not rows:
            return
        try:
            self.write(rows)
        except StoreError:
            for r in rows:
                self._pending.setdefault(r["key"], r)
                self._writing.pop(r["key"], None)
            raise


def _prefix(key: str) -> int:
    """A key's hash: 64 bits held per known key instead of the whole string."""
    return hash(key)


#: Tries at switching a SQLite file to WAL (about 10 s in all, see :func:`_sqlite_pragmas`).
WAL_ATTEMPTS = 28


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")  # first: another process may hold the file
    # Switching a new file to WAL takes a lock for which SQLite does not wait (busy_timeout is
    # not consulted): two processes opening one fresh database at once saw "database is
    # locked". The switch is retried for a while; once one process has made it, it is a no-op.
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


def claim_owner(tag: str | None = None) -> str:
    """This process's name on its claims: ``host:pid:start:random``, ``start`` being the
    process's start time in clock ticks since boot (Linux; ``x`` elsewhere), so that a later
    process that happens to get the same pid is not taken for the owner. ``tag`` (no ``:``)
    replaces the random part where an executor names its workers (see :meth:`Store.release_tag`)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time('self') or 'x'}:{tag or uuid.uuid4().hex[:8]}"


def _start_time(pid: str) -> str | None:
    """A process's start time (field 22 of ``/proc/PID/stat``), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _owner_gone(owner: str) -> bool:
    """Whether a claim's owner was a process of this machine that no longer runs: no process
    with its pid, or one that started at another time (the pid was reused)."""
    host, _, rest = owner.partition(":")
    pid, _, rest = rest.partition(":")
    start = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    if start.isdigit() and _start_time("self") is not None:  # /proc is there to ask
        return _start_time(pid) != start
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
    nor PostgreSQL text can hold) replaced by U+FFFD, in every string of a JSON-like value.
    Strings and plain scalars inside dicts and lists are handled in place, without a call per
    value (a finished game holds hundreds of them)."""
    kind = type(value)
    if kind is str:
        return _safe_text(value)
    if kind is dict or isinstance(value, dict):
        return {(_safe_text(k) if type(k) is str else _safe(k)): (_safe_text(v) if type(v) is str else v if type(v) in _SCALARS else _safe(v)) for k, v in value.items()}
    if kind is list or isinstance(value, (list, tuple)):
        return [_safe_text(v) if type(v) is str else v if type(v) in _SCALARS else _safe(v) for v in value]
    if isinstance(value, str):
        return _safe_text(value)
    return value


_SCALARS = frozenset({int, float, bool, type(None)})


def _safe_text(text: str) -> str:
    text = redact(text)
    # an ASCII string holds no surrogate (isascii is a flag test), so only NUL is looked for
    if text.isascii() and "\x00" not in text:
        return text
    return _UNSTORABLE.sub("\ufffd", text)


def _as_text(cols: list[sa.Column]) -> list[Any]:
    """The columns to select, JSON ones as their stored text (decoded by the caller in one pass)."""
    return [sa.type_coerce(c, sa.Text).label(c.name) if isinstance(c.type, sa.JSON) else c for c in cols]


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused (as it was before, after): a read of 10^5 games makes
    millions of tuples, strings and decoded dicts, none of them in a cycle, and the collector
    walked them all again and again as they piled up (a third of the read's time)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _dicts(result: sa.CursorResult) -> list[dict[str, Any]]:
    """Every row of a result as a dict keyed by column name."""
    keys = list(result.keys())
    return [dict(zip(keys, row)) for row in result]


def _loads(text: str) -> Any:
    """A stored JSON value: orjson (several times faster over 10^5 games), and the standard
    parser for what orjson refuses (NaN written by older versions, integers beyond 64 bits,
    lone surrogates)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _dumps(value: Any) -> str:
    """JSON with non-ASCII text kept as is (a third of the size of escaped Japanese). NaN and
    infinities become null, numpy scalars numbers (:func:`_jsonable`, only when needed: the
    common case is one call of the C encoder)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps(_jsonable(value), ensure_ascii=False)


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
