"""50 simulated participants at once against the real `agora serve`: each finishes a short
bargaining game with no error and no lost turn (speed figures: benchmarks/web_load.py)."""

from __future__ import annotations

import asyncio
import sys

import sqlalchemy as sa

from agorabench.store.schema import participants, web_turns
from agorabench.store.store import Store
from support.helpers import ROOT, free_port
from support.web import ServeProcess

sys.path.insert(0, str(ROOT / "benchmarks"))
from web_load import STUDY, run_load  # noqa: E402


def test_fifty_participants_at_once(tmp_path):
    study = tmp_path / "web_load.toml"
    study.write_text(STUDY)
    db = tmp_path / "load.db"
    server = ServeProcess(study, db, port=free_port()).start()
    try:
        result = asyncio.run(asyncio.wait_for(run_load(server.url, 50, timeout=150), 180))
    finally:
        server.stop()
    assert result["participants"] == 50 and result["codes"] == 50
    store = Store(db)
    try:
        games = store.games("web_load")
        turns = store.turns("web_load")
        with store.engine.connect() as conn:
            stages = conn.execute(sa.select(participants.c.stage, sa.func.count()).group_by(participants.c.stage)).all()
            answered = conn.execute(sa.select(sa.func.count()).select_from(web_turns).where(web_turns.c.answered_at.is_not(None), web_turns.c.timed_out.is_(False))).scalar_one()
    finally:
        store.dispose()
    assert stages == [("done", 50)]
    assert len(games) == 50 and all(g["status"] == "done" and g["n_turns"] == 4 and g["n_invalid"] == 0 for g in games)
    assert len({g["seats"]["alice"] for g in games}) == 50
    # every game: Alice offers 60/40, Bob rejects, Bob demands all, Alice accepts
    assert len(turns) == 200 and answered == 100
    assert all(g["outcome"]["agreed_round"] == 2 and g["outcome"]["alice_gain"] == 0 for g in games)
