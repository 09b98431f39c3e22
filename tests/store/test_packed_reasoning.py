"""Issue 42 item 7: a model's thoughts are stored packed, as transcripts are, in the ``reasoning``
table and in the response cache (long thoughts were stored whole twice: 0.8 MB per reply at the
length cap, 806 MB for 1,002 replies). A GLEE study against the loopback DeepSeek server with
long reasoning: the database holds a small fraction of the thoughts' size, every thought reads
back exactly, and a replay from the response cache stores the same thoughts."""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa

from agorabench.store.codec import PACK_TEXT_FROM, PACKED, pack_text, unpack_text
from agorabench.store.store import Store
from support.helpers import agora
from support.providers import provider_server, server_stats
from support.studies import model, study_toml

THOUGHTS = 12_000  # reasoning tokens (words) per reply: about 90 KB of text


def _study(url: str) -> str:
    entry = model("r", f"deepseek/deepseek-reasoner@{url}", temperature=0)
    fixed = {"horizon": 2, "money": 100, "messages": True, "delta_b": 0.9}
    return study_toml("thoughts", "glee.bargaining", matchups="same_model", repeats=1, seed=3, grid={"delta_a": [0.8, 0.95]}, fixed=fixed, models=[entry])


def _thoughts(db) -> dict[tuple[str, int], str]:
    store = Store(db)
    try:
        return {(t["game_id"], t["idx"]): t["reasoning"] for t in store.turns("thoughts") if t["reasoning"] is not None}
    finally:
        store.dispose()


def test_long_thoughts_are_stored_packed_and_read_back_exactly(tmp_path, capsys):
    path, db, again = tmp_path / "thoughts.toml", tmp_path / "t.db", tmp_path / "again.db"
    with provider_server("deepseek", reasoning_tokens=THOUGHTS) as url:
        path.write_text(_study(url), encoding="utf-8")
        rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe")
        assert rc == 0 and "0 errors" in out, out + err
        thoughts = _thoughts(db)
        assert thoughts and all(len(t) > 50_000 and "options once more before settling" in t for t in thoughts.values())
        raw = sum(len(t.encode("utf-8")) for t in thoughts.values())
        with sqlite3.connect(db) as con:
            stored = con.execute("select coalesce(sum(length(text)), 0) from reasoning").fetchone()[0]
            cached = con.execute("select coalesce(sum(length(response)), 0) from cache").fetchone()[0]
            packed = con.execute("select count(*) from reasoning where text like 'zlib64:%'").fetchone()[0]
        assert packed == len(thoughts)
        # twice whole before (the table and the cache): now both together a small part of once
        assert stored + cached < raw / 10, (stored, cached, raw)
        # a replay from the response cache into another database: no call, the same thoughts
        calls = server_stats(url)["requests"]
        rc, out, err = agora(capsys, "run", str(path), "--db", str(again), "--cache", str(db), "--quiet", "--no-probe")
        assert rc == 0 and server_stats(url)["requests"] == calls, out + err
    assert _thoughts(again) == thoughts


def test_short_thoughts_stay_plain_and_old_rows_read_as_they_are(tmp_path):
    short = "I weigh the offer." * 10
    assert pack_text(short) == short and pack_text(None) is None and len(short) < PACK_TEXT_FROM
    long = "a thought that goes on " * 200
    assert pack_text(long).startswith(PACKED) and unpack_text(pack_text(long)) == long
    assert unpack_text(long) == long  # stored before packing: plain
    assert unpack_text(PACKED + "not base64 at all!") == PACKED + "not base64 at all!"  # plain text that starts so
    # a row written plain by an earlier version reads back as it is
    store = Store(tmp_path / "old.db")
    try:
        from agorabench.records import TurnRecord

        turn = TurnRecord(index=0, role="alice", phase="p", messages=[{"role": "user", "content": "q"}], raw="a", action=None, valid=True, retries=0,
                          error=None, prompt_tokens=1, completion_tokens=1, cost=0.0, latency=0.1, cached=False, reasoning=long, reasoning_tokens=5)
        store.save_game(id="g", study="s", game="glee.bargaining", config={}, seats={"alice": "m"}, repeat=0, seed=1, prompt_version="1", status="done",
                        outcome={}, metrics={}, error=None, turn_records=[turn])
        with store.engine.begin() as conn:
            conn.execute(sa.text("update reasoning set text = :t"), {"t": long})
        assert store.turns("s")[0]["reasoning"] == long
    finally:
        store.dispose()
