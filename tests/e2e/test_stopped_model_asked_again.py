"""A model stopped for invalid answers is asked again by the next run (issue 41 item 3): the
answers of the turns that stopped it leave the response cache, so a server (or prompt, or
setting) fixed meanwhile is asked and plays, instead of the same answers replayed until it stops
again. The stop line says so.

Against the real command line, the loopback OpenAI-compatible server (tests/support/fake_openai.py)
first answering nothing valid, then, on the same port, answering well; real SQLite."""

from __future__ import annotations

import sqlite3

from support.helpers import agora, free_port, server_requests
from support.studies import envy_points, model, paper_grid, scripted

from agorabench.models.base import Completion
from agorabench.store.cache import SQLCache
from agorabench.store.store import Store

#: What the loopback server answers with ``--garbage``.
GARBAGE = "I would rather not pick anything today."


def _study(url: str) -> str:
    """The hosted model against always-B on 12 situations, both seatings (24 games, 12 with the
    model as the focal player, 3 decisions each), stopped after 2 invalid turns in a row."""
    remote = model("remote", "openai/fake", base_url=url, max_tokens=16)
    return envy_points("asked-again", [remote, scripted("b", "always-b")], grid=paper_grid(margin=["marginal"], peer_move=["A", "D"]), seed=3, stop_after_invalid=2)


def test_a_stopped_model_is_asked_again_and_plays_once_its_server_is_fixed(tmp_path, write_study, fake_openai, capsys):
    port = free_port()
    url, stats = fake_openai("--garbage", port=port)
    path, db = write_study(_study(url)), tmp_path / "s.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "1")
    assert rc == 1 and "12 played, 12 errors" in out, out + err
    stop = [x for x in err.splitlines() if "stopped: 2 turns in a row were invalid" in x]
    assert len(stop) == 1 and "which asks the model again" in stop[0] and "not kept in the response cache" in stop[0], err
    assert server_requests(stats) == 2 * 3  # two decisions, each asked three times
    with sqlite3.connect(db) as con:
        kept = [t for (t,) in con.execute("select json_extract(response, '$.text') from cache")]
    assert GARBAGE not in kept  # the answers that stopped the model are not replayable

    fake_openai.stop_all()
    url_again, stats = fake_openai(port=port)  # the same server, fixed
    assert url_again == url
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "1")
    assert rc == 0 and "12 already done, 12 played, 0 errors" in out and "stopped" not in err, out + err
    assert "36 model calls, 0 cache hits" in out and server_requests(stats) == 36  # every decision asked
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from games where status = 'done'").fetchone()[0] == 24
        assert con.execute("select count(*) from turns t join games g on g.id = t.game_id where g.status = 'done' and not t.valid").fetchone()[0] == 0


def test_forgotten_answers_are_found_neither_buffered_nor_stored(tmp_path):
    store = Store(str(tmp_path / "c.db"))
    try:
        cache = SQLCache(store)
        for key in ("stored", "buffered", "kept"):
            cache.put(key, "fake", Completion(text=f"answer {key}", prompt_tokens=1, completion_tokens=2))
            if key == "stored":
                cache.flush()
        cache.forget(["stored", "buffered"])
        assert cache.get("stored") is None and cache.get("buffered") is None and cache.get("kept").text == "answer kept"
        cache.flush()
        fresh = SQLCache(store)  # what the next run reads
        assert fresh.get("stored") is None and fresh.get("buffered") is None and fresh.get("kept").text == "answer kept"
        fresh.put("stored", "fake", Completion(text="asked again", prompt_tokens=1, completion_tokens=1))
        fresh.flush()
        assert SQLCache(store).get("stored").text == "asked again"  # a forgotten key can be kept again
    finally:
        store.dispose()
