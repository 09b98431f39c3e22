"""The web app's rows: the people taking part in a served study (``web_participants``) and the
turns they were shown and answered (``web_turns``), read and written by :class:`Participants` on a
store's database. The store itself never touches these tables; the web app creates them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

import sqlalchemy as sa

from .migrate import add_web_columns
from .schema import participants, web_metadata, web_turns

if TYPE_CHECKING:
    from .store import Store


class Participants:
    """Reads and writes of the web app's tables, on the engine of ``store``."""

    def __init__(self, store: Store) -> None:
        self.engine = store.engine

    def create_tables(self) -> None:
        """Create the web app's tables where they are missing, and add the columns a database
        served by an older agorabench lacks."""
        web_metadata.create_all(self.engine)
        add_web_columns(self.engine)

    # participants -------------------------------------------------------------------------
    def games_of(self, study: str) -> dict[str, str]:
        """Participants' game ids of ``study`` -> the id of the study game each one plays (its
        ``base_spec``); empty for a database that was never served (no participants table)."""
        if not sa.inspect(self.engine).has_table(participants.name):
            return {}
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(participants.c.game_id, participants.c.base_spec).where(participants.c.study == study))
            return {game_id: base for game_id, base in rows}

    def get(self, token: str, study: str) -> dict[str, Any] | None:
        """The row of the participant with session ``token`` in ``study``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(participants).where(participants.c.token == token, participants.c.study == study)).first()
        return dict(row._mapping) if row else None

    def take_resume(self, study: str, code_hash: str, now: float) -> str | None:
        """The session token a resume code opens, once: the code is cleared as it is used; an
        unknown, used or expired code opens nothing."""
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(participants.c.token, participants.c.resume_expires).where(participants.c.study == study, participants.c.resume_hash == code_hash)).first()
            if row is None:
                return None
            conn.execute(sa.update(participants).where(participants.c.token == row.token).values(resume_hash=None, resume_expires=None))
        return row.token if (row.resume_expires or 0) > now else None

    def of_study(self, study: str) -> list[dict[str, Any]]:
        """Every participant row of ``study``, in the order they entered."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(participants).where(participants.c.study == study).order_by(participants.c.created))
            return [dict(r._mapping) for r in rows]

    def update(self, token: str, **values: Any) -> None:
        """Set columns of a participant's row (and its ``updated`` time)."""
        with self.engine.begin() as conn:
            conn.execute(sa.update(participants).where(participants.c.token == token).values(updated=time.time(), **values))

    def of_game(self, study: str, game_id: str) -> list[dict[str, Any]]:
        """The participants of ``study`` who play the game ``game_id`` (a group game has several)."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(participants).where(participants.c.study == study, participants.c.game_id == game_id).order_by(participants.c.created))
            return [dict(r._mapping) for r in rows]

    def form_group(self, rows: dict[str, dict[str, Any]]) -> None:
        """Write a formed group: ``rows`` maps each member's token to its new values (its game id
        and ``group_info``), all in one transaction, so that after a crash either every member
        of the group has it or none."""
        now = time.time()
        with self.engine.begin() as conn:
            for token, values in rows.items():
                conn.execute(sa.update(participants).where(participants.c.token == token).values(updated=now, **values))

    def enter(self, study: str, pid_hash: str, new_row: Callable[[int], dict[str, Any]], aliases: tuple[str, ...] = ()) -> tuple[str, bool]:
        """The session token of the participant ``pid_hash`` of ``study``, and whether the row is
        new. A participant not yet there gets the row ``new_row(n)`` (every column but ``study``
        and ``pid_hash``; ``n`` is how many participants the study has so far), written in the
        transaction that counted them. ``aliases`` are older pseudonyms of the same person (rows
        written before ids were normalised), found when no row has ``pid_hash``. When the same
        person enters twice at the same moment, the loser of the race tries once more and finds
        the winner's row."""
        try:
            return self._enter(study, pid_hash, new_row, aliases)
        except sa.exc.IntegrityError:
            return self._enter(study, pid_hash, new_row, aliases)

    def _enter(self, study: str, pid_hash: str, new_row: Callable[[int], dict[str, Any]], aliases: tuple[str, ...]) -> tuple[str, bool]:
        with self.engine.begin() as conn:
            known = sa.select(participants.c.token).where(participants.c.study == study, participants.c.pid_hash.in_([pid_hash, *aliases]))
            row = conn.execute(known.order_by(sa.case((participants.c.pid_hash == pid_hash, 0), else_=1), participants.c.created).limit(1)).first()
            if row:
                return row[0], False
            n = conn.execute(sa.select(sa.func.count()).select_from(participants).where(participants.c.study == study)).scalar_one()
            values = new_row(n)
            conn.execute(sa.insert(participants).values(study=study, pid_hash=pid_hash, **values))
        return values["token"], True

    # turns --------------------------------------------------------------------------------
    def turn(self, token: str, seq: int) -> dict[str, Any] | None:
        """Turn ``seq`` of a participant, or None when it was never shown."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(web_turns).where(web_turns.c.token == token, web_turns.c.seq == seq)).first()
        return dict(row._mapping) if row else None

    def insert_turn(self, token: str, seq: int, opened_at: float) -> None:
        """A new open turn, opened at ``opened_at``: not shown, not answered."""
        with self.engine.begin() as conn:
            conn.execute(sa.insert(web_turns).values(token=token, seq=seq, opened_at=opened_at, errors=[], timed_out=False))

    def mark_opened(self, token: str, seq: int, opened_at: float) -> None:
        """When the turn was opened, for a turn stored before the column existed."""
        with self.engine.begin() as conn:
            conn.execute(sa.update(web_turns).where(web_turns.c.token == token, web_turns.c.seq == seq, web_turns.c.opened_at.is_(None)).values(opened_at=opened_at))

    def mark_shown(self, token: str, seq: int, shown_at: float) -> None:
        """When the participant first saw the turn's form."""
        with self.engine.begin() as conn:
            conn.execute(sa.update(web_turns).where(web_turns.c.token == token, web_turns.c.seq == seq).values(shown_at=shown_at))

    def record_answer(self, token: str, seq: int, action: Any, answered_at: float, response_time: float, errors: list[str]) -> None:
        """The participant's valid answer to the turn (``action`` as JSON), with the errors of
        their earlier submissions."""
        with self.engine.begin() as conn:
            conn.execute(
                sa.update(web_turns)
                .where(web_turns.c.token == token, web_turns.c.seq == seq)
                .values(action=action, answered_at=answered_at, response_time=response_time, errors=errors)
            )

    def record_timeout(self, token: str, seq: int) -> None:
        """The turn ran out of time (or the participant had gone): it counts as answered now."""
        with self.engine.begin() as conn:
            conn.execute(sa.update(web_turns).where(web_turns.c.token == token, web_turns.c.seq == seq).values(timed_out=True, answered_at=time.time()))

    def record_view(self, token: str, seq: int, view: dict[str, Any]) -> None:
        """The turn as the person saw it (the ``as_seen`` column), for the researcher's desk."""
        with self.engine.begin() as conn:
            conn.execute(sa.update(web_turns).where(web_turns.c.token == token, web_turns.c.seq == seq).values(as_seen=view))

    def turns_of_game(self, study: str, game_id: str) -> dict[str, list[dict[str, Any]]]:
        """The web turns of each person of a game, by role, in the order they were opened (a
        person's n-th turn of the game is their ``seq`` n); empty for a database never served."""
        if not sa.inspect(self.engine).has_table(web_turns.name):
            return {}
        out: dict[str, list[dict[str, Any]]] = {}
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(participants.c.role, web_turns)
                .join(web_turns, web_turns.c.token == participants.c.token)
                .where(participants.c.study == study, participants.c.game_id == game_id)
                .order_by(participants.c.role, web_turns.c.seq)
            )
            for r in rows:
                out.setdefault(r.role, []).append(dict(r._mapping))
        return out

    def answered_count(self, token: str) -> int:
        """How many turns the participant answered (timeouts included)."""
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(web_turns).where(web_turns.c.token == token, web_turns.c.answered_at.is_not(None))).scalar_one()
