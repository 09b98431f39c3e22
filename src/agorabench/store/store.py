"""The store: every study, game and turn, plus the response cache, in SQLite (one file, WAL)
or PostgreSQL (by URL), through SQLAlchemy Core. This module holds :class:`Store`, the one way
other rooms read and write the database; the rest of the package ``store`` holds its parts:

- :mod:`~agorabench.store.schema`: the tables (the store's, and the web app's beside them);
- :mod:`~agorabench.store.codec`: what JSON and text columns hold (:func:`_safe`, the JSON codec);
- :mod:`~agorabench.store.errors`: :class:`StoreError` and the one-line wording of failures;
- :mod:`~agorabench.store.engine`: opening a database (SQLite settings, PostgreSQL, checks);
- :mod:`~agorabench.store.layout`: per-role transcripts and turn spans (:func:`layout`, :func:`game_rows`);
- :mod:`~agorabench.store.claims`: claims of games by processes, and process liveness;
- :mod:`~agorabench.store.writer`: :class:`GameWriter`, group commit of finished games;
- :mod:`~agorabench.store.cache`: :class:`SQLCache`, the response cache;
- :mod:`~agorabench.store.migrate`: :func:`migrate`, the upgrade of the older layout;
- :mod:`~agorabench.store.participants`: the web app's participants and their turns.

The names other code imported from this module before it was split stay importable here
(listed after the imports); the package's own modules import each from its defining module.

A finished game is written in one transaction with all its turns, so a kill loses at most the
games in flight; a game whose backend failed for good is stored with status ``error`` and is
played again by the next run. Every failure of the database itself (disk full, a damaged file,
a server out of reach, a missing driver) is a :class:`StoreError` with a one-line message, and
everything written goes through :func:`_safe`, so no API key, URL credential or unencodable
character is stored. ``Store(db, read_only=True)`` opens an existing SQLite file without
creating anything (reports and exports of an archived or shared database).

A turn's prompt is not stored with the turn: each role's messages are stored once per game and
a turn keeps where its prompt lies in them; :meth:`Store.turns` and :meth:`Store.turn_messages`
give the full prompts back. A database of the layout before that is refused with a message
naming ``agora migrate DB``.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

import sqlalchemy as sa

from ..records import GameRecord, Record, StudyRecord
from ..redact import redact
from .claims import ClaimMethods
from . import thoughts as stored_thoughts
from .codec import _loads, _safe, unpack_messages
from .engine import delete_in, insert_rows, integrity_level, legacy_layout, open_engine, verify_integrity
from .errors import DB_ERRORS, StoreError, _problem
from .layout import _span, game_rows
from .schema import claims, games, prompt_hashes, reasoning, studies, study_runs, transcripts, turns, usage

# Names of the store's parts that code outside the package (tests, scripts) imported from this
# module before the store was split, kept importable here; the package imports each from its
# defining module (tests/house/test_architecture.py holds it to that).
from .cache import SQLCache  # noqa: F401,E402
from .claims import CLAIM_TTL, _owner_gone, claim_owner  # noqa: F401,E402
from .engine import _url  # noqa: F401,E402
from .errors import StoreFormatError, damaged, is_damage  # noqa: F401,E402
from .layout import layout  # noqa: F401,E402
from .migrate import migrate  # noqa: F401,E402
from .writer import GameWriter  # noqa: F401,E402


class Store(ClaimMethods):
    """One database: studies, games with their turns and transcripts, recorded seatings, and
    (through :class:`~agorabench.store.claims.ClaimMethods`) the claims of running processes."""

    def __init__(self, db: str | Path, read_only: bool = False, check_format: bool = True, check_integrity: bool | str = True) -> None:
        """Open (or create) the database (see :func:`~agorabench.store.engine.open_engine`: an
        existing SQLite file must pass SQLite's integrity check unless ``check_integrity`` is
        off: the full check when opened read-only (reports, exports) or with ``"full"`` (a
        run), the quick one otherwise; one of the older layout is refused unless
        ``check_format`` is off)."""
        self.read_only = read_only
        self.db = str(db)
        self.engine = open_engine(db, read_only=read_only, check_format=check_format, check_integrity=check_integrity)
        #: Whether the full integrity check has passed (or there is nothing it could check).
        self.verified = integrity_level(check_integrity, read_only) == "full" or self.engine.dialect.name != "sqlite"

    def verify(self) -> None:
        """SQLite's full integrity check, once per store (nothing for PostgreSQL or a store
        opened with it): a :class:`StoreError` ("database file is damaged: ...") if an index
        does not hold exactly its table's rows, which the quick check at opening lets pass. A
        run calls it before it writes."""
        if not self.verified:
            verify_integrity(self.engine, redact(self.db), full=True)
            self.verified = True

    def legacy_layout(self) -> bool:
        """Whether the database has the old ``turns.messages`` column (see :func:`migrate`)."""
        return legacy_layout(self.engine)

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

    def other_prompt_versions(self, study: str, current: dict[str, str], hashes: dict[str, str] | None = None) -> dict[tuple[str, str], set[str]]:
        """The done games of ``study`` played with templates of another version than the one
        now in force (``current``: game -> version), by (game, stored version): their ids.
        With ``hashes`` (game -> digest of the templates now in force), a game of the same
        version whose stored digest differs (templates edited without a new ``VERSION``) is
        among them too, under its version; one stored without a digest is not."""
        if not current:
            return {}
        other = sa.or_(*(sa.and_(games.c.game == game, games.c.prompt_version != version) for game, version in current.items()))
        out: dict[tuple[str, str], set[str]] = {}
        with self.engine.connect() as conn:
            for gid, game, version in conn.execute(sa.select(games.c.id, games.c.game, games.c.prompt_version).where(games.c.study == study, games.c.status == "done", other)):
                out.setdefault((game, version), set()).add(gid)
            if hashes and self._has_table(conn, "prompt_hashes"):
                edited = sa.or_(*(sa.and_(games.c.game == game, games.c.prompt_version == current[game], prompt_hashes.c.hash != digest) for game, digest in hashes.items() if game in current))
                q = sa.select(games.c.id, games.c.game, games.c.prompt_version).join(prompt_hashes, prompt_hashes.c.game_id == games.c.id)
                for gid, game, version in conn.execute(q.where(games.c.study == study, games.c.status == "done", edited)):
                    out.setdefault((game, version), set()).add(gid)
        return out

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
                for table in (reasoning, usage, prompt_hashes, turns, transcripts):
                    delete_in(conn, table, table.c.game_id, chunk)
                delete_in(conn, games, games.c.id, chunk)
            insert_rows(conn, games, [g["game"] for g in batch])
            rows = [r for g in batch for r in g["transcripts"]]
            if rows:
                insert_rows(conn, transcripts, rows)
            rows = [r for g in batch for r in g["turns"]]
            if rows:
                insert_rows(conn, turns, rows)
            stored_thoughts.save(conn, (r for g in batch for r in g.get("thoughts", ())))  # before the rows naming them
            rows = [r for g in batch for r in g.get("reasoning", ())]
            if rows:
                insert_rows(conn, reasoning, rows)
            rows = [r for g in batch for r in g.get("usage", ())]
            if rows:
                insert_rows(conn, usage, rows)
            rows = [r for g in batch for r in g.get("prompt_hashes", ())]
            if rows:
                insert_rows(conn, prompt_hashes, rows)

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
                stored = {(g, role): unpack_messages(msgs) for g, role, msgs in conn.execute(tq)}
                for r in rows:
                    r["messages"] = _span(stored.get((r["game_id"], r["role"])), r["msg_start"], r["msg_count"])
            thoughts = self._reasoning(conn, study, game_id)
            used = self._usage(conn, study, game_id)
        for r in rows:
            text, tokens, finish = thoughts.get((r["game_id"], r["idx"]), (None, None, None))
            r["reasoning"], r["reasoning_tokens"], r["finish_reason"] = text, tokens, finish
            r["cached_tokens"], r["cache_write_tokens"], r["tier"], r["fallbacks"] = used.get((r["game_id"], r["idx"]), NO_USAGE)
        return rows

    def usage_columns(self, study: str | None = None) -> dict[tuple[str, int], tuple[int, int, str | None, int]]:
        """(game id, turn index) -> (cached tokens, cache-write tokens, billed tier, fallbacks) of
        the turns that have a ``usage`` row (every other turn: :data:`NO_USAGE`)."""
        with self.engine.connect() as conn:
            return self._usage(conn, study, None)

    def _usage(self, conn: sa.Connection, study: str | None, game_id: str | None) -> dict[tuple[str, int], tuple[int, int, str | None, int]]:
        if not self._has_table(conn, "usage"):  # a database written before the table existed, read-only
            return {}
        q = sa.select(usage.c.game_id, usage.c.idx, usage.c.cached_tokens, usage.c.cache_write_tokens, usage.c.tier, usage.c.fallbacks)
        if study is not None:
            q = q.join(games, games.c.id == usage.c.game_id).where(games.c.study == study)
        if game_id is not None:
            q = q.where(usage.c.game_id == game_id)
        return {(g, i): (int(c or 0), int(w or 0), t, int(f or 0)) for g, i, c, w, t, f in conn.execute(q)}

    def _has_table(self, conn: sa.Connection, name: str) -> bool:
        """Whether the database has table ``name`` (asked once per store)."""
        known = self.__dict__.setdefault("_tables_known", {})
        if name not in known:
            known[name] = sa.inspect(conn).has_table(name)
        return known[name]

    def reasoning_columns(self, study: str | None = None) -> dict[tuple[str, int], tuple[str | None, int | None, str | None]]:
        """(game id, turn index) -> (thoughts, reasoning tokens, finish reason) of the turns that
        have a ``reasoning`` row (every other turn: none, not reported, a plain stop)."""
        with self.engine.connect() as conn:
            return self._reasoning(conn, study, None)

    def _reasoning(self, conn: sa.Connection, study: str | None, game_id: str | None) -> dict[tuple[str, int], tuple[str | None, int | None, str | None]]:
        if not self._has_reasoning(conn):  # a database written before the table existed, read-only
            return {}
        q = sa.select(reasoning.c.game_id, reasoning.c.idx, reasoning.c.text, reasoning.c.tokens, reasoning.c.finish_reason)
        if study is not None:
            q = q.join(games, games.c.id == reasoning.c.game_id).where(games.c.study == study)
        if game_id is not None:
            q = q.where(reasoning.c.game_id == game_id)
        rows = conn.execute(q).all()
        found = stored_thoughts.resolve(conn, (r[2] for r in rows))  # long thoughts stored once, by hash
        return {(g, i): (stored_thoughts.read(t, found), n, f) for g, i, t, n, f in rows}

    def _has_reasoning(self, conn: sa.Connection) -> bool:
        known = getattr(self, "_reasoning_table", None)
        if known is None:
            known = self._reasoning_table = sa.inspect(conn).has_table("reasoning")
        return known

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

    def done_among(self, game_ids: list[str]) -> set[str]:
        """Which of these games are stored as done."""
        if not game_ids:
            return set()
        with self.engine.connect() as conn:
            if conn.dialect.name == "sqlite":  # the same SELECT's text to the driver (a run asks this for each batch of claims)
                prep = conn.dialect.identifier_preparer
                table, id_, status = prep.format_table(games), prep.format_column(games.c.id), prep.format_column(games.c.status)
                marks = ", ".join("?" * len(game_ids))
                return {g for g, in conn.exec_driver_sql(f"SELECT {id_} FROM {table} WHERE {id_} IN ({marks}) AND {status} = ?", (*game_ids, "done"))}
            return set(conn.execute(sa.select(games.c.id).where(games.c.id.in_(game_ids), games.c.status == "done")).scalars())

    def game_transcripts(self, game: str, study: str | None = None) -> Iterator[tuple[str, str, dict[str, Any], str, dict[str, list[dict[str, str]]]]]:
        """(id, study, config, prompt version, messages by role) of every stored game of kind
        ``game`` (of one study if given), one game at a time."""
        q = sa.select(games.c.id, games.c.study, games.c.config, games.c.prompt_version).where(games.c.game == game).order_by(games.c.id)
        if study is not None:
            q = q.where(games.c.study == study)
        with self.engine.connect() as conn:
            rows = conn.execute(q).all()
            for gid, name, config, version in rows:
                roles = {r: unpack_messages(m) for r, m in conn.execute(sa.select(transcripts.c.role, transcripts.c.messages).where(transcripts.c.game_id == gid))}
                yield gid, name, config, version, roles

    def forget_games(self, game_ids: list[str]) -> int:
        """Delete these games with their turns, transcripts and claims (the next run plays them
        again); the number of games deleted."""
        n = 0
        with self.engine.begin() as conn:
            for start in range(0, len(game_ids), 500):
                chunk = game_ids[start : start + 500]
                for table in (reasoning, usage, prompt_hashes, turns, transcripts, claims):
                    conn.execute(sa.delete(table).where(table.c.game_id.in_(chunk)))
                n += conn.execute(sa.delete(games).where(games.c.id.in_(chunk))).rowcount
        return n

    # summaries and single games, for the web app ------------------------------------------
    def status_counts(self) -> dict[str, dict[str, int]]:
        """study -> status -> how many of its games are stored with that status."""
        out: dict[str, dict[str, int]] = {}
        with self.engine.connect() as conn:
            for study, status, n in conn.execute(sa.select(games.c.study, games.c.status, sa.func.count()).group_by(games.c.study, games.c.status)):
                out.setdefault(study, {})[status] = n
        return out

    def turn_totals(self) -> dict[str, dict[str, Any]]:
        """study -> sums over all its turns: ``turns`` (how many), ``calls`` (turns not answered
        from the cache), ``tokens`` (prompt and completion), ``cost`` and ``invalid`` (turns not
        valid); a sum over no values is None, as the database gives it."""
        q = sa.select(
            games.c.study,
            sa.func.count(),
            sa.func.sum(sa.case((turns.c.cached, 0), else_=1)),
            sa.func.sum(sa.func.coalesce(turns.c.prompt_tokens, 0) + sa.func.coalesce(turns.c.completion_tokens, 0)),
            sa.func.sum(turns.c.cost),
            sa.func.sum(sa.case((turns.c.valid, 0), else_=1)),
        ).join(games, games.c.id == turns.c.game_id).group_by(games.c.study)
        with self.engine.connect() as conn:
            rows = conn.execute(q).all()
        return {study: {"turns": n, "calls": calls, "tokens": tokens, "cost": cost, "invalid": invalid} for study, n, calls, tokens, cost, invalid in rows}

    def spend_by_seat(self, study: str) -> list[dict[str, Any]]:
        """What the study's stored turns used, summed per seating and role (the dashboard maps
        each to its model): ``seats`` (role -> model), ``role``, ``turns``, ``calls`` (turns not
        answered from the response cache), and over those calls only ``input``, ``output`` and
        ``reasoning`` tokens (None where no call reported reasoning), ``cost``, the prompt tokens
        read from and written to the provider's cache (``cached``, ``cache_write``, of ``input``),
        ``fallbacks`` to the standard tier and ``by_tier`` (billed tier -> dollars)."""
        bought = sa.not_(sa.func.coalesce(turns.c.cached, False))
        seats_text = sa.cast(games.c.seats, sa.Text)
        q = (
            sa.select(
                seats_text,
                turns.c.role,
                sa.func.count(),
                sa.func.sum(sa.case((bought, 1), else_=0)),
                sa.func.sum(sa.case((bought, turns.c.prompt_tokens), else_=0)),
                sa.func.sum(sa.case((bought, turns.c.completion_tokens), else_=0)),
                sa.func.sum(sa.case((bought, reasoning.c.tokens), else_=None)),
                sa.func.sum(sa.case((bought, turns.c.cost), else_=0.0)),
            )
            .select_from(turns.join(games, games.c.id == turns.c.game_id).outerjoin(reasoning, sa.and_(reasoning.c.game_id == turns.c.game_id, reasoning.c.idx == turns.c.idx)))
            .where(games.c.study == study)
            .group_by(seats_text, turns.c.role)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(q).all()
            spent = self._spend_by_tier(conn, study, bought, seats_text)
        out = []
        for s, role, n, calls, inp, out_tokens, rsn, cost in rows:
            cached, written, fallbacks, by_tier = spent.get((s, role), (0, 0, 0, {}))
            out.append({
                "seats": _loads(s) if isinstance(s, str) else (s or {}), "role": role, "turns": n, "calls": int(calls or 0), "input": int(inp or 0), "output": int(out_tokens or 0),
                "reasoning": None if rsn is None else int(rsn), "cost": float(cost or 0.0),
                "cached": cached, "cache_write": written, "fallbacks": fallbacks, "by_tier": by_tier or ({"standard": float(cost or 0.0)} if cost else {}),
            })
        return out

    def _spend_by_tier(self, conn: sa.Connection, study: str, bought: Any, seats_text: Any) -> dict[tuple[Any, str], tuple[int, int, int, dict[str, float]]]:
        """(seating as text, role) -> (prompt-cache reads, writes, fallbacks, cost per billed tier)
        over the calls bought (no ``usage`` table: empty, every call read as the standard tier)."""
        if not self._has_table(conn, "usage"):
            return {}
        tier = sa.func.coalesce(usage.c.tier, sa.literal_column("'standard'"))  # a literal, not a parameter: PostgreSQL groups by the same expression
        q = (
            sa.select(seats_text, turns.c.role, tier, sa.func.sum(usage.c.cached_tokens), sa.func.sum(usage.c.cache_write_tokens), sa.func.sum(usage.c.fallbacks), sa.func.sum(turns.c.cost))
            .select_from(turns.join(games, games.c.id == turns.c.game_id).outerjoin(usage, sa.and_(usage.c.game_id == turns.c.game_id, usage.c.idx == turns.c.idx)))
            .where(games.c.study == study, bought)
            .group_by(seats_text, turns.c.role, tier)
        )
        out: dict[tuple[Any, str], tuple[int, int, int, dict[str, float]]] = {}
        for s, role, name, cached, written, fallbacks, cost in conn.execute(q):
            c, w, f, by_tier = out.get((s, role), (0, 0, 0, {}))
            if cost:
                by_tier[name] = by_tier.get(name, 0.0) + float(cost)
            out[(s, role)] = (c + int(cached or 0), w + int(written or 0), f + int(fallbacks or 0), by_tier)
        return out

    def game_summaries(self, study: str | None = None, status: str | None = None, game: str | None = None) -> Iterator[dict[str, Any]]:
        """The games (id, study, game, config, seats, status, n_turns, n_invalid, metrics,
        error), most recently finished first, of one study, status and kind of game where
        given; one at a time, so a reader that stops early does not read the rest."""
        q = sa.select(games.c.id, games.c.study, games.c.game, games.c.config, games.c.seats, games.c.status, games.c.n_turns, games.c.n_invalid, games.c.metrics, games.c.error).order_by(games.c.finished.desc())
        if study:
            q = q.where(games.c.study == study)
        if status:
            q = q.where(games.c.status == status)
        if game:
            q = q.where(games.c.game == game)
        with self.engine.connect() as conn:
            for r in conn.execute(q):
                yield dict(r._mapping)

    def game(self, game_id: str) -> dict[str, Any] | None:
        """The row of one game, or None when there is no such game."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(games).where(games.c.id == game_id)).first()
        return dict(row._mapping) if row is not None else None

    # the whole database ---------------------------------------------------------------
    def studies(self) -> list[dict[str, Any]]:
        """Every study row."""
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(sa.select(studies))]

    def study_spec(self, study: str) -> dict[str, Any]:
        """The stored study file (as saved by the runner or an importer; the latest run's), or {};
        its ``models`` also list the models of every earlier run of the study (first of each name
        kept), so a later run with other models does not hide the games of an earlier one."""
        for row in self.studies():
            if row["name"] == study:
                spec = row.get("spec") or {}
                seen = {m.get("name") for m in spec.get("models") or []}
                extra = []
                for seating in self.recorded_runs(study) if spec.get("models") else []:
                    for entry in seating.get("models") or []:
                        if entry.get("name") not in seen:
                            seen.add(entry.get("name"))
                            extra.append(entry)
                return {**spec, "models": [*spec["models"], *extra]} if extra else spec
        return {}

    def dispose(self) -> None:
        """Close the engine's connections."""
        self.engine.dispose()


#: A turn without a ``usage`` row: nothing read from or written to a prompt cache, billed at the
#: standard tier or not at all (None), no fallback.
NO_USAGE: tuple[int, int, str | None, int] = (0, 0, None, 0)


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
