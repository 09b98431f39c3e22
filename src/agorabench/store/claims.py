"""Claims, through which several processes play one study together, and process liveness.

Each game is claimed (a row in ``claims``) before it is played; the claimer keeps its claims
alive with a heartbeat, and a claim whose heartbeat is older than :data:`CLAIM_TTL`, or whose
owner was a process of this machine that no longer runs, may be taken over. An owner is named
by :func:`claim_owner`. :class:`ClaimMethods` holds the :class:`~agorabench.store.store.Store`
methods that read and write the table.

Heartbeats are written and compared on the database's clock (:class:`db_now`), never on the
claiming host's: two machines whose clocks differ by minutes sharing one PostgreSQL database
each took the other's live claims for stale ones (one host 300 s ahead saw every heartbeat of
the other as 300 s old) and played the same games twice.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from .schema import claims

#: Seconds after its last heartbeat when a claim counts as abandoned (its process crashed).
CLAIM_TTL = 120.0


class db_now(FunctionElement):
    """The database's current time in seconds since the epoch, as an SQL expression evaluated by
    the database itself (PostgreSQL: the server's clock, at the start of the transaction;
    SQLite: the clock of the machine it runs on, the one machine that shares a file), so every
    claimer's heartbeats and staleness tests use one clock."""

    type = sa.Float()
    inherit_cache = True
    name = "db_now"


@compiles(db_now)
def _db_now(element, compiler, **kw) -> str:
    return "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) AS DOUBLE PRECISION)"


@compiles(db_now, "sqlite")
def _db_now_sqlite(element, compiler, **kw) -> str:
    return "((julianday('now') - 2440587.5) * 86400.0)"


class ClaimMethods:
    """The claim methods of :class:`~agorabench.store.store.Store` (on its ``engine``)."""

    engine: sa.Engine

    def claim(self, game_id: str, study: str, owner: str, ttl: float = CLAIM_TTL) -> bool:
        """Claim a game for ``owner``; False if another live process holds it. A claim whose
        heartbeat is older than ``ttl`` seconds, or whose owner was a process of this machine
        that is gone (killed), is taken over. Portable: an insert that fails on the primary key,
        then a conditional update, each in its own transaction. Heartbeats and their age are the
        database's time (:class:`db_now`), not this host's."""
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(claims).values(game_id=game_id, study=study, owner=owner, heartbeat=db_now()))
            return True
        except sa.exc.IntegrityError:
            pass
        with self.engine.begin() as conn:
            holder = conn.execute(sa.select(claims.c.owner).where(claims.c.game_id == game_id)).scalar()
            stale = claims.c.heartbeat < db_now() - ttl
            if holder is not None and _owner_gone(holder):
                stale = sa.or_(stale, claims.c.owner == holder)
            taken = conn.execute(
                sa.update(claims)
                .where(claims.c.game_id == game_id, sa.or_(claims.c.owner == owner, stale))
                .values(owner=owner, study=study, heartbeat=db_now())
            )
            return taken.rowcount == 1

    def running(self, study: str = "", ttl: float = CLAIM_TTL) -> list[dict[str, Any]]:
        """The games being played now: claims with a heartbeat within ``ttl`` seconds (a run
        releases a game's claim when it stores the game), of ``study`` or of every study, the
        most recent first, each with its study, owner and heartbeat."""
        query = sa.select(claims).where(claims.c.heartbeat >= db_now() - ttl).order_by(claims.c.heartbeat.desc())
        if study:
            query = query.where(claims.c.study == study)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def claim_many(self, game_ids: list[str], study: str, owner: str, ttl: float = CLAIM_TTL) -> set[str]:
        """Claim several games at once; returns the ids now held by ``owner``. The games no one
        holds are claimed in one transaction (a run claims its games in batches, not with a
        round trip each); a game someone holds, or a batch that met a concurrent claimer, goes
        through :meth:`claim` one at a time (which takes over stale and dead owners' claims)."""
        if not game_ids:
            return set()
        try:
            with self.engine.begin() as conn:
                if conn.dialect.name == "sqlite":  # the same statements' text to the driver (_sqlite_claims)
                    select, insert = _sqlite_claims(conn.dialect, len(game_ids))
                    held = {g for g, in conn.exec_driver_sql(select, tuple(game_ids))}
                    free = [g for g in game_ids if g not in held]
                    if free:
                        conn.exec_driver_sql(insert, [(g, study, owner) for g in free])
                else:
                    held = {g for g, in conn.execute(sa.select(claims.c.game_id).where(claims.c.game_id.in_(game_ids)))}
                    free = [g for g in game_ids if g not in held]
                    if free:
                        conn.execute(sa.insert(claims).values(heartbeat=db_now()), [{"game_id": g, "study": study, "owner": owner} for g in free])
        except sa.exc.IntegrityError:  # another process claimed some of them in the meantime
            return {g for g in game_ids if self.claim(g, study, owner, ttl)}
        return set(free) | {g for g in game_ids if g in held and self.claim(g, study, owner, ttl)}

    def release_many(self, game_ids: list[str], owner: str) -> None:
        """Drop ``owner``'s claims on these games."""
        if game_ids:
            with self.engine.begin() as conn:
                conn.execute(sa.delete(claims).where(claims.c.game_id.in_(game_ids), claims.c.owner == owner))

    def heartbeat(self, owner: str) -> None:
        """Keep ``owner``'s claims alive (on the database's clock)."""
        with self.engine.begin() as conn:
            conn.execute(sa.update(claims).where(claims.c.owner == owner).values(heartbeat=db_now()))

    def release_all(self, owner: str) -> None:
        """Drop every claim of ``owner`` (at the end of its run, once its games are stored)."""
        with self.engine.begin() as conn:
            conn.execute(sa.delete(claims).where(claims.c.owner == owner))

    def release_tag(self, tag: str) -> int:
        """Drop the claims of every owner named with ``tag`` (:func:`claim_owner`), on any host:
        an executor's earlier attempt at the same share, known to be dead. Returns how many."""
        with self.engine.begin() as conn:
            return conn.execute(sa.delete(claims).where(claims.c.owner.endswith(":" + tag, autoescape=True))).rowcount


#: The INSERT of :meth:`ClaimMethods.claim_many` as SQLite's text with qmark parameters (compiled once).
_SQLITE_CLAIM_INSERT: list[str] = []


def _sqlite_claims(dialect: sa.Dialect, n: int) -> tuple[str, str]:
    """:meth:`ClaimMethods.claim_many`'s statements on SQLite as SQLAlchemy renders them, for
    the driver: the SELECT of the claimed games among ``n`` ids, and the INSERT of one claim
    (game id, study, owner; its heartbeat :class:`db_now`, evaluated by SQLite for each row).
    SQLAlchemy coerced every id and expanded the IN anew for each batch (a run claims its games
    64 at a time)."""
    if not _SQLITE_CLAIM_INSERT:  # compiled by SQLite's dialect with its qmark parameters, whatever the engine's paramstyle
        from sqlalchemy.dialects import sqlite

        compiled = sa.insert(claims).values(heartbeat=db_now()).compile(dialect=sqlite.dialect(paramstyle="qmark"), column_keys=["game_id", "study", "owner"])
        if list(compiled.positiontup or ()) != ["game_id", "study", "owner"]:  # pragma: no cover - SQLAlchemy's order of the given columns
            raise RuntimeError(f"unexpected parameter order of the claims INSERT: {compiled.positiontup}")
        _SQLITE_CLAIM_INSERT.append(str(compiled))
    prep = dialect.identifier_preparer
    select = f"SELECT {prep.format_column(claims.c.game_id)} FROM {prep.format_table(claims)} WHERE {prep.format_column(claims.c.game_id)} IN ({', '.join('?' * n)})"
    return select, _SQLITE_CLAIM_INSERT[0]


def claim_owner(tag: str | None = None) -> str:
    """This process's name on its claims: ``host:pid:start:random``, ``start`` being the
    process's start time in clock ticks since boot (Linux; ``x`` elsewhere), so that a later
    process that happens to get the same pid is not taken for the owner. ``tag`` (no ``:``)
    replaces the random part where an executor names its workers (see ``Store.release_tag``)."""
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
    except OSError:  # it exists, owned by someone else
        return False
    return False
