"""Issue 22 item 11, across restarts: a turn's idle deadline counts from when the turn was first
opened (``web_turns.opened_at``), so a participant who left before a server restart is
abandoned at once by the next server, not after a fresh idle period; one who was abandoned
stays so when their game is played again; databases served by an older version get the column.
The participant app is driven through its Manager (what `agora serve` runs), no HTTP."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from agorabench.core.study import Study, load_study
from agorabench.store.participants import Participants
from agorabench.store.store import GameWriter, Store
from agorabench.web.play import Manager
from support.web import web_study

IDLE = 60.0  # seconds: far longer than any test here waits


def _open_first_turn(path: Path, db: Path, pid: str) -> dict:
    """A participant reaches the play screen, the game opens their first turn, and the server
    stops (its games are cancelled, as on Ctrl-C); returns their row."""

    async def go() -> dict:
        store = Store(db)
        manager = Manager(load_study(path), store)
        try:
            token, _ = manager.enter("link", pid, {})
            manager.update(token, stage="play")
            live = await manager.start(manager.get(token))
            for _ in range(500):
                if live.pending is not None:
                    break
                await asyncio.sleep(0.01)
            assert live.pending is not None and live.pending.seq == 0
            return manager.get(token)
        finally:
            await manager.stop()
            store.dispose()

    return asyncio.run(go())


def _restart(path: Path, db: Path, game_id: str, seconds: float = 10.0) -> dict | None:
    """A new server (Manager) on the same database resumes the games in play; returns the
    participant's game once stored, or None after ``seconds``."""

    async def go() -> dict | None:
        store = Store(db)
        manager = Manager(load_study(path), store)
        try:
            assert await manager.resume_all() == 1
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                game = store.game(game_id)
                if game is not None:
                    await asyncio.sleep(0.05)  # the row's status is written right after the game
                    return store.game(game_id)
                await asyncio.sleep(0.05)
            return None
        finally:
            await manager.stop()
            store.dispose()

    return asyncio.run(go())


def _participant(db: Path, token: str) -> dict:
    store = Store(db)
    try:
        return Participants(store).get(token, "web_idle_restart")
    finally:
        store.dispose()


@pytest.fixture
def study_path(tmp_path) -> Path:
    return web_study(tmp_path, name="web_idle_restart", web={"time_limit": 0, "idle_timeout": IDLE, "attention_checks": [], "quiz": []})


def test_a_participant_who_left_before_a_restart_is_abandoned_at_once(study_path, tmp_path, monkeypatch):
    db = tmp_path / "web.db"
    row = _open_first_turn(study_path, db, "LEFT1")
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 2 * IDLE)  # the server was down longer than the idle period
    started = time.monotonic()
    game = _restart(study_path, db, row["game_id"])
    assert game is not None, "not stored: the restarted server gave the participant a fresh idle period"
    assert game["status"] == "abandoned" and time.monotonic() - started < 10
    assert _participant(db, row["token"])["game_status"] == "abandoned"


def test_a_participant_who_returns_within_the_idle_period_keeps_the_rest_of_it(study_path, tmp_path, monkeypatch):
    """The deadline is the first opening's: after a restart half an idle period later the turn
    is still open (the participant can answer), and it closes half a period later, not a whole one."""
    db = tmp_path / "web.db"
    row = _open_first_turn(study_path, db, "BACK1")
    store = Store(db)
    try:
        opened = Participants(store).turn(row["token"], 0)["opened_at"]
    finally:
        store.dispose()
    assert opened is not None and abs(opened - time.time()) < 60
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + IDLE / 2)
    assert _restart(study_path, db, row["game_id"], seconds=1.0) is None  # still waiting for them
    monkeypatch.setattr(time, "time", lambda: real() + IDLE + 1)
    game = _restart(study_path, db, row["game_id"])
    assert game is not None and game["status"] == "abandoned"


def test_a_game_replayed_after_the_participant_left_is_stored_abandoned(study_path, tmp_path, monkeypatch):
    """The server stops after every turn of a leaver was recorded (timed out past the idle
    deadline) but before the game was stored; the next server replays the recorded turns and
    stores the game as abandoned, not done."""
    db = tmp_path / "web.db"
    row = _open_first_turn(study_path, db, "LEFT2")
    with monkeypatch.context() as m:
        real = time.time
        m.setattr(time, "time", lambda: real() + 2 * IDLE)

        def killed(self, **game):
            raise asyncio.CancelledError  # the server stops while the game is being stored

        m.setattr(GameWriter, "save_game", killed)
        assert _restart(study_path, db, row["game_id"], seconds=1.0) is None
    store = Store(db)
    try:
        turns = [Participants(store).turn(row["token"], seq) for seq in range(2)]
    finally:
        store.dispose()
    assert all(t is not None and t["timed_out"] for t in turns), turns  # the fallback played every turn of theirs
    game = _restart(study_path, db, row["game_id"])
    assert game is not None and game["status"] == "abandoned"
    assert _participant(db, row["token"])["game_status"] == "abandoned"


def test_a_database_served_by_an_older_version_gets_the_opened_column(study_path, tmp_path):
    """``web_turns`` without ``opened_at`` (as an older version created it): serving the study
    adds the column and the idle clock works; a turn stored before it counts from its reopening."""
    db = tmp_path / "old.db"
    Store(db).dispose()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE web_turns (token VARCHAR(64) NOT NULL, seq INTEGER NOT NULL, shown_at FLOAT, answered_at FLOAT,"
            " action JSON, response_time FLOAT, errors JSON, timed_out BOOLEAN, PRIMARY KEY (token, seq))"
        )
    row = _open_first_turn(study_path, db, "OLD1")
    store = Store(db)
    try:
        assert "opened_at" in {c["name"] for c in sa.inspect(store.engine).get_columns("web_turns")}
        Participants(store).create_tables()  # a second time: nothing to add, no error
        with store.engine.begin() as conn:  # as if stored before the column existed
            conn.execute(sa.text("UPDATE web_turns SET opened_at = NULL"))
    finally:
        store.dispose()
    assert _restart(study_path, db, row["game_id"], seconds=0.5) is None  # an idle period from now
    store = Store(db)
    try:
        assert Participants(store).turn(row["token"], 0)["opened_at"] is not None
    finally:
        store.dispose()


def test_serving_a_study_never_lists_its_design(tmp_path, monkeypatch):
    """Issue 22 item 2 for studies with people in seats: the web app keeps only the games with a
    human seat, and `agora run` plays the model-only ones, both without ``Study.expand``."""
    from agorabench.core.runner import run_study

    path = web_study(
        tmp_path, name="web_mixed", web={"attention_checks": [], "quiz": []},
        seats=[{"alice": "participant", "bob": "opponent"}, {"alice": "opponent", "bob": "participant"}, {"alice": "opponent", "bob": "opponent"}],
    )

    def listed(self):
        raise AssertionError("Study.expand was called: the whole design listed in memory")

    monkeypatch.setattr(Study, "expand", listed)
    study = load_study(path)
    store = Store(tmp_path / "web.db")
    try:
        manager = Manager(study, store)
        assert len(manager.human_specs) == 2 and all(manager._human_roles(s) for s in manager.human_specs)
    finally:
        store.dispose()
    stats, _ = run_study(study, tmp_path / "web.db", progress=False)
    assert (stats.total, stats.skipped, stats.done) == (1, 0, 1)


def test_a_participant_who_never_answers_never_makes_a_game_fail():
    """Why a leaver's game stored as ``error`` stays ``error``: leaving itself never fails a game
    (every turn of theirs gets the game's fallback, in every role of every game; a server stop
    cancels the game unstored and the next server replays it, see above), so such an error is
    the game's own (a model backend, the store), as for anyone else."""
    from agorabench import conformance, families
    from agorabench.core.agents import Human

    class Gone:
        async def wait_answer(self, request):
            return None

    for game in sorted(families.examples()):
        config = conformance.config_of(game)
        for role in families.load_game(game).active_roles(config):
            for seed in range(3):
                players = {**conformance.scripted_players(game, config), role: Human(Gone())}
                played = conformance.play(game, players, seed=seed, config=config)
                assert played.outcome is not None and any(t.role == role and not t.valid for t in played.turns), (game, role, seed)
