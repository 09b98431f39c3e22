"""Issue 42 item 7: a model's thoughts are stored once and packed. Long thoughts were stored
whole twice (the ``reasoning`` table and the response cache: 0.8 MB per reply at the length cap,
806 MB for 1,002 replies); now they go once into the ``thoughts`` table, packed as transcripts
are and keyed by the SHA-256 of their text, and both rows name them by hash. A GLEE study
against the loopback DeepSeek server with long reasoning: the table and the cache together hold
one packed copy of each thought, every thought reads back exactly, a replay from the response
cache into another database stores the same thoughts; databases of earlier versions (two plain
or packed copies, no ``thoughts`` table) read as they did."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import sqlalchemy as sa

from agorabench.models.base import Completion
from agorabench.store.cache import SQLCache
from agorabench.store.codec import PACK_TEXT_FROM, PACKED, pack_text, unpack_text
from agorabench.store.thoughts import is_ref
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
        distinct = set(thoughts.values())
        once = sum(len(pack_text(t)) for t in distinct)  # one packed copy of each thought
        with sqlite3.connect(db) as con:
            stored = con.execute("select coalesce(sum(length(text)), 0) from reasoning").fetchone()[0]
            cached = con.execute("select coalesce(sum(length(response)), 0) from cache").fetchone()[0]
            kept = con.execute("select hash, text from thoughts").fetchall()
            refs = [r[0] for r in con.execute("select text from reasoning where text is not null")]
            cache_refs = [json.loads(r[0]).get("reasoning") for r in con.execute("select response from cache")]
        # one row per distinct thought, keyed by its text's hash, packed; every row names one
        assert {h for h, _ in kept} == {hashlib.sha256(t.encode("utf-8")).hexdigest() for t in distinct}
        assert all(text.startswith(PACKED) for _, text in kept) and sum(len(t) for _, t in kept) == once
        assert len(refs) == len(thoughts) and all(is_ref(r) for r in refs)
        assert len(cache_refs) == len(thoughts) and all(is_ref(r) for r in cache_refs) and set(cache_refs) == set(refs)
        # the table and the cache together: the packed copy once, plus a reference per row
        assert stored + cached < 2_000 * len(thoughts) and once < raw / 10, (stored, cached, once, raw)
        # a replay from the response cache into another database: no call, the same thoughts
        calls = server_stats(url)["requests"]
        rc, out, err = agora(capsys, "run", str(path), "--db", str(again), "--cache", str(db), "--quiet", "--no-probe")
        assert rc == 0 and server_stats(url)["requests"] == calls, out + err
    assert _thoughts(again) == thoughts
    with sqlite3.connect(again) as con:  # the other database holds its own one copy
        assert con.execute("select count(*) from thoughts").fetchone()[0] == len(set(thoughts.values()))


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
            assert conn.execute(sa.text("select count(*) from thoughts")).scalar() == 1
            conn.execute(sa.text("update reasoning set text = :t"), {"t": long})
        assert store.turns("s")[0]["reasoning"] == long
        # the cache of an earlier version: the thoughts whole (or packed) in the answer itself
        cache = SQLCache(store)
        cache.put("k1", "m", Completion(text="a", prompt_tokens=1, completion_tokens=1, latency=0.1, reasoning=long, reasoning_tokens=5))
        cache.put("k2", "m", Completion(text="b", prompt_tokens=1, completion_tokens=1, latency=0.1, reasoning=long, reasoning_tokens=5))
        assert cache.get("k1").reasoning == long  # buffered
        cache.flush()
        with store.engine.begin() as conn:  # both answers name the one row
            assert conn.execute(sa.text("select count(*) from thoughts")).scalar() == 1
            conn.execute(sa.text("update cache set response = json_set(response, '$.reasoning', :t) where key = 'k1'"), {"t": long})
            conn.execute(sa.text("update cache set response = json_set(response, '$.reasoning', :t) where key = 'k2'"), {"t": pack_text(long)})
            conn.execute(sa.text("delete from thoughts"))
        fresh = SQLCache(store)
        assert fresh.get("k1").reasoning == long and fresh.get("k2").reasoning == long
        # a database written before the thoughts table: read as it is
        with store.engine.begin() as conn:
            conn.execute(sa.text("drop table thoughts"))
        store.dispose()
        store = Store(tmp_path / "old.db", read_only=True)
        assert store.turns("s")[0]["reasoning"] == long and SQLCache(store).get("k2").reasoning == long
    finally:
        store.dispose()
