"""Issue 41 item 9: in the participants export a person who dropped out of a group game (their
seat went to the fallback) has ``status`` "dropped out" and ``dropped_out`` as an ISO 8601 UTC
time, as every other time of the table; one who finished is "finished" even after a pause, and
one still playing "in progress". Rows are written to a real SQLite database as the web app
writes them."""

from __future__ import annotations

import sqlalchemy as sa

from agorabench.analysis.participants import participants_df
from agorabench.store.participants import Participants
from agorabench.store.schema import participants
from agorabench.store.store import Store

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _row(token: str, **values):
    row = {
        "token": token, "study": "s", "participant": f"P{token}", "pid_hash": f"h{token}", "source": "prolific", "params": {},
        "csrf": "c", "stage": "play", "base_spec": "b", "game_id": "g1", "role": "alice", "quiz_attempts": 1, "attention": [],
        "answers": {}, "game_status": None, "code": None, "bonus": None, "created": T0, "updated": T0 + 60,
        "waiting_since": None, "group_info": None, "dropped_out": None, "consented_at": None, "finished_at": None,
    }
    return {**row, **values}


def test_a_dropout_is_dropped_out_at_an_iso_time(tmp_path):
    store = Store(str(tmp_path / "w.db"))
    try:
        Participants(store).create_tables()
        with store.engine.begin() as conn:
            conn.execute(sa.insert(participants), [
                _row("1", stage="results", game_status="abandoned", dropped_out=T0 + 125.0, waiting_since=T0 + 10.0, group_info={"members": {}}),
                _row("2", role="bob", stage="done", game_status="done", waiting_since=T0 + 20.0, finished_at=T0 + 400.0, consented_at=T0 + 5.0),
                _row("3", game_id="g2"),
                _row("4", game_id="g3", stage="results", game_status="abandoned"),  # a one-person game left past its idle deadline
            ])
        df = participants_df(store, "s", spec={}).set_index("participant_id")
    finally:
        store.dispose()
    assert df.loc["P1", "status"] == "dropped out" and df.loc["P1", "dropped_out"] == "2026-01-01T00:02:05+00:00"
    assert df.loc["P1", "waiting_since"] == "2026-01-01T00:00:10+00:00"
    assert df.loc["P2", "status"] == "finished" and df.loc["P2", "dropped_out"] is None and df.loc["P2", "finished"] == "2026-01-01T00:06:40+00:00"
    assert df.loc["P3", "status"] == "in progress"
    assert df.loc["P4", "status"] == "dropped out"
