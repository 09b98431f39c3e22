"""Issue 44 item 10: on SQLite the store writes games, turns, transcripts and cache answers
through the driver's ``executemany`` (``engine.insert_rows``), each value converted by its
column type's own bind processor; what the database holds is the same, value for value and type
for type, as SQLAlchemy's ``insert`` writes from the same rows."""

import asyncio
import copy
import sqlite3

import pytest

from agorabench.core.runner import Runner
from agorabench.core.study import load_study
from agorabench.store import engine as engine_module
from agorabench.store.store import SQLCache, Store, StoreError
from support.studies import envy_points, model, paper_grid, scripted


def _dump(path) -> dict[str, list[str]]:
    """Every row of every table, each value with its SQLite storage class."""
    db = sqlite3.connect(path)
    tables = [t for (t,) in db.execute("select name from sqlite_master where type = 'table' order by name")]
    out = {}
    for t in tables:
        cols = [c[1] for c in db.execute(f'pragma table_info("{t}")')]
        sel = ", ".join(f'typeof("{c}"), "{c}"' for c in cols)
        out[t] = sorted(repr(r) for r in db.execute(f'select {sel} from "{t}"'))
    db.close()
    return out


def _study(url: str) -> str:
    grid = paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=["A", "D"])
    models = [model("remote", "openai/fake", base_url=url), scripted("b", "always-b")]
    return envy_points("insert_rows", models, matchups="seats", seats=[{"focal": "remote", "peer": "b"}], repeats=2, grid=grid)


def test_fast_inserts_store_what_sqlalchemy_stores(tmp_path, write_study, fake_openai, monkeypatch):
    url, _ = fake_openai()
    batches: list[list[dict]] = []
    answers: list[list[dict]] = []
    real_save, real_write = Store.save_games, SQLCache.write

    def save_games(self, batch):
        batches.append(copy.deepcopy(batch))
        return real_save(self, batch)

    def write(self, rows):
        answers.append(copy.deepcopy(rows))
        return real_write(self, rows)

    monkeypatch.setattr(Store, "save_games", save_games)
    monkeypatch.setattr(SQLCache, "write", write)
    study = load_study(write_study(_study(url)))
    store = Store(tmp_path / "played.db")
    stats = asyncio.run(Runner(study, store, concurrency=4, cache=SQLCache(store), progress=False, probe=False).run())
    store.dispose()
    assert stats.done == 4 and batches and answers
    # edge rows: JSON None in a none_as_null column and in one that stores JSON null, columns
    # left to their defaults, booleans, a float, non-ASCII text
    game = dict(batches[0][0]["game"], id="edge", config=None, outcome=None, metrics=None, error="fin — échec")
    for k in ("source", "n_turns", "n_invalid", "repeat", "prompt_version"):
        game.pop(k, None)
    turn = dict(batches[0][0]["turns"][0], game_id="edge", action=None, valid=False, cached=True, latency=1.5)
    edge = {"game": game, "turns": [turn], "transcripts": [dict(batches[0][0]["transcripts"][0], game_id="edge")]}
    batches.append([edge])

    def replay(path) -> dict[str, list[str]]:
        s = Store(path)
        for batch in batches:
            s.save_games(copy.deepcopy(batch))
        cache = SQLCache(s)
        for rows in answers:
            cache.write(copy.deepcopy(rows))
        s.dispose()
        return _dump(path)

    monkeypatch.undo()
    planned = []
    real_plan = engine_module._plan
    monkeypatch.setattr(engine_module, "_plan", lambda *a: planned.append(a[1].name) or real_plan(*a))
    fast = replay(tmp_path / "fast.db")
    assert {"games", "turns", "transcripts", "cache"} <= set(planned)  # the fast path was taken
    monkeypatch.setattr(engine_module, "_plan", lambda *a: None)  # SQLAlchemy's insert for every row
    plain = replay(tmp_path / "plain.db")
    assert fast.keys() == plain.keys()
    for table in fast:
        assert fast[table] == plain[table], table
    assert len(fast["games"]) == 5 and len(fast["turns"]) == 13 and len(fast["cache"]) == 12
    assert any("'edge'" in r and "'null'" in r and "'fin — échec'" in r for r in fast["games"])


def test_rows_with_other_keys_or_an_unknown_column(tmp_path, monkeypatch):
    """Rows whose keys differ from the first's take SQLAlchemy's path, which stores what it
    always stored (the statement made from the first row's keys); so does a row with a key that
    is no column (SQLAlchemy leaves the key out)."""
    base = {"id": "g1", "study": "s", "game": "envy.points", "config": {}, "seats": {}, "seed": 1, "status": "done"}
    batch = [{"game": base, "turns": [], "transcripts": []}, {"game": {**base, "id": "g2", "source": "import:x"}, "turns": [], "transcripts": []}]
    dumps = []
    for name in ("mixed.db", "plain.db"):
        store = Store(tmp_path / name)
        store.save_games(copy.deepcopy(batch))
        store.save_games([{"game": {**base, "id": "g3", "colour": "red"}, "turns": [], "transcripts": []}])
        store.dispose()
        dumps.append(_dump(tmp_path / name))
        monkeypatch.setattr(engine_module, "_plan", lambda *a: None)
    assert dumps[0] == dumps[1] and len(dumps[0]["games"]) == 3


def test_a_value_its_column_refuses_is_a_store_error(tmp_path):
    """A value a column type's processor refuses (not a boolean) fails the write with a
    StoreError, as through SQLAlchemy, and nothing of the group is stored."""
    store = Store(tmp_path / "v.db")
    base = {"id": "g1", "study": "s", "game": "envy.points", "config": {}, "seats": {}, "seed": 1, "status": "done"}
    turn = {"game_id": "g1", "idx": 0, "role": "focal", "valid": "yes"}
    with pytest.raises(StoreError, match="g1"):
        store.save_games([{"game": base, "turns": [turn], "transcripts": []}])
    assert store.games() == []
    store.dispose()
