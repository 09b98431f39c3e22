"""Issue 32 item 6: inside a run that writes in the background, a finished game's rows (its
transcripts sanitised and packed) are made on the writer's thread, not on the event loop's; the
stored games are the same as rows made at once, and each game's finishing time is the time it was
saved, not the time its group was written."""

import asyncio
import threading
import time

from agorabench.core.runner import Runner
from agorabench.core.study import load_study
from agorabench.store import writer as writer_module
from agorabench.store.layout import game_rows
from agorabench.store.store import GameWriter, SQLCache, Store
from support.studies import envy_points, model, paper_grid, scripted


def _study(url: str) -> str:
    grid = paper_grid(matrix=["M1", "M2"], peer_status=["leading"], margin=["marginal"], peer_move=["A", "D"])
    models = [model("remote", "openai/fake", base_url=url), scripted("b", "always-b")]
    return envy_points("rows_off_loop", models, matchups="seats", seats=[{"focal": "remote", "peer": "b"}], repeats=3, grid=grid)


def test_game_rows_are_made_on_the_writer_thread(tmp_path, write_study, fake_openai, monkeypatch):
    url, _ = fake_openai()
    made: list[tuple[int, float]] = []  # (thread, when) of each game_rows call

    def recording(**fields):
        made.append((threading.get_ident(), time.time()))
        return game_rows(**fields)

    monkeypatch.setattr(writer_module, "game_rows", recording)
    saved: dict[str, float] = {}
    real_save = GameWriter.save_game

    def save_game(self, **fields):
        saved[fields["id"]] = time.time()
        return real_save(self, **fields)

    monkeypatch.setattr(GameWriter, "save_game", save_game)
    study = load_study(write_study(_study(url)))
    store = Store(tmp_path / "w.db")
    runner = Runner(study, store, concurrency=4, cache=SQLCache(store), progress=False, probe=False)
    runner.writer.batch = 3
    loop_thread: list[int] = []

    async def go():
        loop_thread.append(threading.get_ident())
        return await runner.run()

    stats = asyncio.run(go())
    assert stats.done == 12 and len(store.done_ids("rows_off_loop")) == 12
    assert len(made) == 12 and all(thread != loop_thread[0] for thread, _ in made)
    # the finishing time is taken when the game is saved (a game's group is written later)
    for g in store.games("rows_off_loop"):
        assert abs(g["finished"] - saved[g["id"]]) < 0.05, (g["id"], g["finished"], saved[g["id"]])
        assert g["n_turns"] == 3 and g["status"] == "done"
    assert all(store.turns("rows_off_loop", game_id=gid) for gid in saved)
    store.dispose()


def test_outside_a_run_rows_are_made_at_once_on_the_callers_thread(tmp_path):
    """A game saved outside a grouped block (the web app) is in the store when ``save_game``
    returns; so is one saved inside a block that writes on the caller's thread."""
    store = Store(tmp_path / "o.db")
    writer = GameWriter(store, batch=10, interval=3600)
    fields = dict(study="s", game="x", config={}, seats={"a": "m"}, repeat=0, seed=1, prompt_version="", status="done", outcome={}, metrics=None, error=None, turn_records=[])
    writer.save_game(id="g1", **fields)
    assert store.done_ids("s") == {"g1"}
    with writer.grouped():
        writer.save_game(id="g2", **fields)
        assert writer._pending and type(writer._pending[0]) is dict  # rows made at once
    assert store.done_ids("s") == {"g1", "g2"}
    store.dispose()
