"""The store: every study, game and turn, plus the response cache, in SQLite (one file, WAL)
or PostgreSQL (by URL), through SQLAlchemy Core.

A finished game is written in one transaction with all its turns, so a kill loses at most
the games in flight; a game whose backend failed for good is stored with status ``error`` and
is played again on the next run.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Iterable

import sqlalchemy as sa

from ..core.table import TurnRecord
from ..models.base import Completion

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


def _url(db: str | Path) -> str:
    db = str(db)
    return db if "://" in db else f"sqlite:///{db}"


class Store:
    def __init__(self, db: str | Path) -> None:
        url = _url(db)
        if url.startswith("sqlite:///"):
            Path(url[len("sqlite:///") :]).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.engine = sa.create_engine(url, future=True)
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        metadata.create_all(self.engine)

    # studies ---------------------------------------------------------------
    def save_study(self, name: str, game: str, spec: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.delete(studies).where(studies.c.name == name))
            conn.execute(sa.insert(studies).values(name=name, game=game, spec=spec, created=time.time()))

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
        """Replace the game's row and turns in one transaction."""
        records = list(turn_records)
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
                    outcome=_jsonable(outcome),
                    metrics=_jsonable(metrics),
                    error=error,
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
                            "messages": t.messages,
                            "raw": t.raw,
                            "action": _jsonable(t.action),
                            "valid": t.valid,
                            "retries": t.retries,
                            "error": t.error,
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
        with self.store.engine.connect() as conn:
            row = conn.execute(sa.select(cache.c.response).where(cache.c.key == key)).first()
        if row is None:
            return None
        r = row[0]
        return Completion(text=r["text"], prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"], latency=r["latency"], finish_reason=r["finish_reason"])

    def put(self, key: str, identity: str, c: Completion) -> None:
        response = {"text": c.text, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "latency": c.latency, "finish_reason": c.finish_reason}
        with self.store.engine.begin() as conn:
            conn.execute(sa.delete(cache).where(cache.c.key == key))
            conn.execute(sa.insert(cache).values(key=key, identity=identity, response=response, created=time.time()))


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


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
