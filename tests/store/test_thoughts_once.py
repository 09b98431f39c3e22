"""Issue 42 item 7 on both engines: long thoughts are stored once per database (table
``thoughts``, keyed by the SHA-256 of their text), however many writers name them: the games'
``reasoning`` rows and the response cache's answers, two games with the same thoughts, a game
stored again; every writer reads them back exactly, and short thoughts stay in their rows."""

from __future__ import annotations

import hashlib

import sqlalchemy as sa

from agorabench.models.base import Completion
from agorabench.records import TurnRecord
from agorabench.store.cache import SQLCache
from agorabench.store.codec import PACK_TEXT_FROM
from agorabench.store.store import Store
from agorabench.store.thoughts import REF, is_ref, stored_thought

LONG = "Weighing the offer against waiting one more round, the discount matters. " * 40
OTHER = "A second line of thought, about the opponent's patience. " * 40
SHORT = "I accept."


def _turn(i: int, reasoning: str | None) -> TurnRecord:
    return TurnRecord(index=i, role="alice", phase="offer", messages=[{"role": "user", "content": f"q{i}"}], raw="a", action=None, valid=True, retries=0,
                      error=None, prompt_tokens=1, completion_tokens=1, cost=0.0, latency=0.1, cached=False, reasoning=reasoning, reasoning_tokens=7)


def _save(store: Store, gid: str, *texts: str | None) -> None:
    store.save_game(id=gid, study="s", game="glee.bargaining", config={}, seats={"alice": "m"}, repeat=0, seed=1, prompt_version="1", status="done",
                    outcome={}, metrics={}, error=None, turn_records=[_turn(i, t) for i, t in enumerate(texts)])


def _count(store: Store, sql: str) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.text(sql)).scalar()


def test_long_thoughts_once_per_database_whoever_writes_them(make_db):
    store = Store(make_db("thoughts"))
    try:
        cache = SQLCache(store)
        cache.put("k", "m", Completion(text="a", prompt_tokens=1, completion_tokens=1, latency=0.1, reasoning=LONG, reasoning_tokens=7))
        cache.flush()
        _save(store, "g1", LONG, SHORT, OTHER)
        _save(store, "g2", LONG, None)
        _save(store, "g1", LONG, SHORT, OTHER)  # stored again (a game played again): no second copy
        assert _count(store, "select count(*) from thoughts") == 2
        hashes = {hashlib.sha256(t.encode("utf-8")).hexdigest() for t in (LONG, OTHER)}
        with store.engine.connect() as conn:
            assert set(conn.execute(sa.text("select hash from thoughts")).scalars()) == hashes
            texts = dict(((g, i), t) for g, i, t in conn.execute(sa.text("select game_id, idx, text from reasoning")))
        assert texts[("g1", 1)] == SHORT and all(is_ref(texts[k]) for k in (("g1", 0), ("g1", 2), ("g2", 0)))
        by_turn = {(t["game_id"], t["idx"]): t["reasoning"] for t in store.turns("s")}
        assert by_turn == {("g1", 0): LONG, ("g1", 1): SHORT, ("g1", 2): OTHER, ("g2", 0): LONG, ("g2", 1): None}
        assert store.reasoning_columns("s")[("g2", 0)][0] == LONG
        assert SQLCache(store).get("k").reasoning == LONG  # read from the table, by hash
    finally:
        store.dispose()


def test_the_reference_is_the_texts_hash_and_short_text_stays_as_it_is():
    assert stored_thought(None) == (None, None) and stored_thought(SHORT) == (SHORT, None)
    edge = "x" * PACK_TEXT_FROM
    ref, row = stored_thought(edge)
    assert ref == REF + hashlib.sha256(edge.encode()).hexdigest() == REF + row["hash"] and is_ref(ref)
    assert stored_thought("x" * PACK_TEXT_FROM)[0] == ref  # the same text, another object: the same key
    assert not is_ref("sha256:" + "g" * 64) and not is_ref(SHORT) and not is_ref(None)
