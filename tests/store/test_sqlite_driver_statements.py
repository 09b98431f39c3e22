"""Issue 44 item 10: on SQLite the group commit's and the response cache's deletes, the claims
of a batch of games and the question which of them are done go to the driver as text
(``engine.delete_in``, ``claims._sqlite_claims``, ``Store.done_among``), and the JSON columns
are encoded by the C encoder made once (``codec._dumps``); each does what SQLAlchemy's
statement (or ``json.dumps``) did."""

import copy
import json
import sqlite3

import pytest
import sqlalchemy as sa

from agorabench.store import codec
from agorabench.store import engine as engine_module
from agorabench.store.engine import delete_in, open_engine
from agorabench.store.schema import cache, games, turns
from agorabench.store.store import Store, StoreError


def _rows(path, table: str) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return sorted(db.execute(f'select * from "{table}"').fetchall())
    finally:
        db.close()


def _fill(engine) -> None:
    with engine.begin() as conn:
        conn.execute(sa.insert(cache), [{"key": k, "identity": "m", "response": {"text": k}, "created": 1.0} for k in ("a", "b", "c", "d'x")])
        conn.execute(sa.insert(games), [{"id": g, "study": "s", "game": "envy.points", "config": {}, "seats": {}, "seed": 1, "status": "done"} for g in ("g1", "g2", "g3")])
        conn.execute(sa.insert(turns), [{"game_id": g, "idx": i, "role": "r", "valid": True} for g in ("g1", "g2", "g3") for i in range(2)])


@pytest.mark.parametrize("keys", [["a", "c"], ["d'x"], ["zz"], [], ["a", "b", "c", "d'x", "a"]])
def test_delete_in_deletes_what_sqlalchemy_deletes(tmp_path, keys):
    dumps = []
    for name, delete in (("driver.db", delete_in), ("plain.db", lambda conn, t, c, v: conn.execute(sa.delete(t).where(c.in_(v))) if v else None)):
        engine = open_engine(tmp_path / name)
        _fill(engine)
        with engine.begin() as conn:
            delete(conn, cache, cache.c.key, keys)  # "key" is a word SQL reserves: quoted as SQLAlchemy quotes it
            delete(conn, turns, turns.c.game_id, ["g2"])
        engine.dispose()
        dumps.append((_rows(tmp_path / name, "cache"), _rows(tmp_path / name, "turns")))
    assert dumps[0] == dumps[1]
    left = {r[0] for r in dumps[0][0]}
    assert left == {"a", "b", "c", "d'x"} - set(keys)
    assert {r[0] for r in dumps[0][1]} == {"g1", "g3"}


def test_rows_of_as_many_keys_but_other_ones_take_sqlalchemys_path(tmp_path, monkeypatch):
    """A row with as many keys as the first but not the same ones is not written by the first
    row's plan: it goes to SQLAlchemy's path, which refuses a row without a value the first row
    gave (a StoreError, nothing stored), as it does with no plan at all."""
    base = {"id": "g1", "study": "s", "game": "envy.points", "config": {}, "seats": {}, "seed": 1, "status": "done", "repeat": 3}
    other = {k: v for k, v in base.items() if k != "repeat"} | {"id": "g2", "source": "import:x"}
    assert len(other) == len(base) and other.keys() != base.keys()
    taken = []
    real_execute = sa.Connection.execute
    monkeypatch.setattr(sa.Connection, "execute", lambda self, stmt, *a, **k: taken.append(type(stmt).__name__) or real_execute(self, stmt, *a, **k))
    for name in ("mixed.db", "plain.db"):
        store = Store(tmp_path / name)
        with pytest.raises(StoreError, match="g1"):
            store.save_games([{"game": copy.deepcopy(base), "turns": [], "transcripts": []}, {"game": copy.deepcopy(other), "turns": [], "transcripts": []}])
        assert store.games() == []
        store.save_games([{"game": copy.deepcopy(other), "turns": [], "transcripts": []}])  # alone, it is stored
        store.dispose()
        assert [r[0] for r in _rows(tmp_path / name, "games")] == ["g2"]
        monkeypatch.setattr(engine_module, "_plan", lambda *a: None)
    assert "Insert" in taken  # SQLAlchemy's insert was used for the mixed rows


def test_claims_and_done_among_on_sqlite(tmp_path):
    store = Store(tmp_path / "c.db")
    assert store.claim_many(["a", "b", "c"], "st", "me") == {"a", "b", "c"}
    assert store.claim_many(["a", "d"], "st", "other") == {"d"}  # a is held (a live owner, a fresh heartbeat)
    rows = _rows(tmp_path / "c.db", "claims")
    assert [(g, s, o) for g, s, o, _ in rows] == [("a", "st", "me"), ("b", "st", "me"), ("c", "st", "me"), ("d", "st", "other")]
    with store.engine.connect() as conn:  # the heartbeat is the database's clock (db_now), as SQLAlchemy's statement wrote it
        now = conn.exec_driver_sql("select (julianday('now') - 2440587.5) * 86400.0").scalar()
    assert all(abs(beat - now) < 60 for *_, beat in rows)
    base = {"study": "st", "game": "envy.points", "config": {}, "seats": {}, "seed": 1}
    store.save_games([{"game": {**base, "id": "a", "status": "done"}, "turns": [], "transcripts": []}, {"game": {**base, "id": "b", "status": "error"}, "turns": [], "transcripts": []}])
    assert store.done_among(["a", "b", "x"]) == {"a"}
    assert store.done_among([]) == set()
    store.dispose()


VALUES = [
    None, 1, -0.0, 1.5, 1e300, 2**70, "é\x00\ud800\n\"\\\u2028", "", [], {}, (1, 2), [1, [2, {"a": None}]],
    {"b": 1, "a": [True, False]}, {1: "int key", True: "bool key", None: "none key", 2.5: "float key"},
    float("nan"), [float("inf")], {"x": {1, 2}}, {"t": (1, "two")},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_json_columns_text_is_json_dumps(value):
    """``codec._dumps``: the text of ``json.dumps(value, ensure_ascii=False, allow_nan=False)``,
    and where that refuses the value, that of its plain form (:func:`codec._jsonable`)."""
    try:
        expected = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        expected = json.dumps(codec._jsonable(value), ensure_ascii=False)
    assert codec._dumps(value) == expected


def test_json_of_a_value_that_holds_itself_is_the_same_error():
    looped: list = []
    looped.append(looped)
    with pytest.raises(RecursionError):
        codec._dumps(looped)
    assert codec._dumps([1, {"a": "b"}]) == '[1, {"a": "b"}]'  # and the encoder still works after it
