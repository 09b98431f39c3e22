"""Linear storage: each role's messages are stored once per game and every turn points into
them, yet every turn's full prompt comes back (store, export, one-turn lookup); old databases are
refused with a one-line message and upgraded by ``agora migrate``; finished games are committed
in groups."""

import asyncio
import json
import random
import sqlite3

import pandas as pd
import pytest

from agorabench.analysis.frames import turns_df
from agorabench.core.runner import Runner
from agorabench.core.study import load_study
from agorabench.core.table import TurnRecord
from agorabench.store.codec import unpack_messages
from agorabench.store.store import GameWriter, SQLCache, Store, StoreFormatError, layout
from support.helpers import run_agora
from support.studies import envy_points, model, paper_grid, scripted

STUDY = """
name = "layout"
game = "glee.persuasion"
matchups = "all_pairs"
[grid]
myopic = [true, false]
messages = [false, true]
[fixed]
horizon = 6
[[models]]
name = "r"
spec = "strategy/random"
[[models]]
name = "t"
spec = "strategy/truthful"
"""


def record(index: int, role: str, messages: list[dict[str, str]]) -> TurnRecord:
    return TurnRecord(index, role, "p", messages, "raw", None, True, 0, None, 0, 0, 0.0, 0.0, True)


def msg(i: int) -> dict[str, str]:
    return {"role": "user" if i % 2 else "assistant", "content": f"m{i}"}


def test_layout_stores_any_prompt_sequence_exactly():
    rng = random.Random(7)
    for _ in range(200):
        records, current = [], []
        for i in range(rng.randint(0, 12)):
            role = rng.choice(["a", "b"])
            move = rng.random()
            if move < 0.6:  # the transcript grows
                current = current + [msg(rng.randint(0, 5)) for _ in range(rng.randint(0, 3))]
            elif move < 0.8:  # reset (a myopic player)
                current = [msg(rng.randint(0, 5))]
            else:  # an earlier prefix again
                current = current[: rng.randint(0, len(current))]
            records.append(record(i, role, list(current)))
        stored, spans = layout(records)
        for r, (start, count) in zip(records, spans):
            assert stored.get(r.role, [])[start : start + count] == r.messages


def test_growing_transcripts_are_stored_once():
    prompts = [[msg(j) for j in range(2 * k + 1)] for k in range(30)]  # 30 turns, each one longer
    stored, spans = layout([record(i, "a", p) for i, p in enumerate(prompts)])
    assert len(stored["a"]) == len(prompts[-1]) == 59  # linear, not 30 * 59 / 2
    assert spans[4] == (0, 9)


def play(db, write_study, seen):
    """Run the study, keeping what each turn was shown as the table produced it."""

    class Recording(GameWriter):
        def save_game(self, **fields):
            fields["turn_records"] = list(fields["turn_records"])
            seen[fields["id"]] = [(t.index, t.role, t.messages) for t in fields["turn_records"]]
            super().save_game(**fields)

    study = load_study(write_study(STUDY))
    store = Store(db)
    runner = Runner(study, store, concurrency=4, cache=SQLCache(store), progress=False)
    runner.writer = Recording(store, batch=3)
    stats = asyncio.run(runner.run())
    return store, stats


def test_every_turn_gets_its_full_prompt_back(tmp_path, write_study):
    seen: dict[str, list] = {}
    store, stats = play(tmp_path / "l.db", write_study, seen)
    assert stats.done == 16 and len(seen) == 16
    rows = store.turns("layout")
    assert len(rows) == sum(len(v) for v in seen.values()) > 16 * 6
    by_key = {(r["game_id"], r["idx"]): r for r in rows}
    for game_id, turns in seen.items():
        for idx, role, messages in turns:
            assert by_key[game_id, idx]["messages"] == messages
        idx, role, messages = turns[-1]
        assert store.turn_messages(game_id, idx) == messages
    with pytest.raises(KeyError):
        store.turn_messages(next(iter(seen)), 10_000)
    # the export carries the same prompts
    df = turns_df(store, "layout")
    first = df.iloc[0]
    assert json.loads(first["messages"]) == dict(((g, i), m) for g, t in seen.items() for i, _, m in t)[first["game_id"], first["idx"]]


def test_storage_is_linear_in_the_transcript(tmp_path, write_study):
    seen: dict[str, list] = {}
    store, _ = play(tmp_path / "l.db", write_study, seen)
    con = sqlite3.connect(tmp_path / "l.db")
    games = {g["id"]: g for g in store.games("layout")}
    for game_id, turns in seen.items():
        stored = {role: unpack_messages(json.loads(m)) for role, m in con.execute("select role, messages from transcripts where game_id = ?", (game_id,))}
        assert all(isinstance(v, list) for v in stored.values())
        shown = sum(len(m) for _, _, m in turns)
        if not games[game_id]["config"]["myopic"]:
            # each role's messages once: the longest prompt, not the sum of all prompts
            for role in stored:
                assert len(stored[role]) == max(len(m) for _, r, m in turns if r == role)
            assert sum(len(v) for v in stored.values()) < shown / 2
        else:  # the buyer's transcript restarts every round: still each message at most once
            assert sum(len(v) for v in stored.values()) <= shown


OLD_TURNS = """CREATE TABLE turns (game_id VARCHAR(64) NOT NULL, idx INTEGER NOT NULL, role VARCHAR(50) NOT NULL,
 phase VARCHAR(100), messages JSON, raw TEXT, action JSON, valid BOOLEAN NOT NULL, retries INTEGER, error TEXT,
 prompt_tokens INTEGER, completion_tokens INTEGER, cost FLOAT, latency FLOAT, cached BOOLEAN, metrics JSON,
 PRIMARY KEY (game_id, idx), FOREIGN KEY(game_id) REFERENCES games (id) ON DELETE CASCADE)"""


def old_database(tmp_path, write_study):
    """A database in the layout before per-role transcripts: each turn holds its whole prompt."""
    seen: dict[str, list] = {}
    store, _ = play(tmp_path / "old.db", write_study, seen)
    rows = store.turns("layout")
    store.dispose()
    con = sqlite3.connect(tmp_path / "old.db")
    con.execute("DROP TABLE turns")
    con.execute("DROP TABLE transcripts")
    con.execute(OLD_TURNS)
    con.executemany(
        "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(r["game_id"], r["idx"], r["role"], r["phase"], json.dumps(r["messages"]), r["raw"], json.dumps(r["action"]), r["valid"], r["retries"], r["error"], 0, 0, 0.0, 0.0, True, json.dumps(r["metrics"])) for r in rows],
    )
    con.commit()
    con.close()
    return tmp_path / "old.db", {(r["game_id"], r["idx"]): r["messages"] for r in rows}


def test_old_database_is_refused_then_migrated(tmp_path, write_study):
    db, prompts = old_database(tmp_path, write_study)
    with pytest.raises(StoreFormatError, match="agora migrate"):
        Store(db)
    res = run_agora("export", "layout", "--db", str(db), "--table", "turns", "--out", str(tmp_path / "t.csv"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and f"agora: error: {db}" in res.stderr and "agora migrate" in res.stderr
    res = run_agora("migrate", str(db))
    assert res.returncode == 0 and "migrated 16 games" in res.stdout, res.stderr
    store = Store(db)
    assert {(r["game_id"], r["idx"]): r["messages"] for r in store.turns("layout")} == prompts
    assert run_agora("migrate", str(db)).stdout.strip().endswith("already has the current layout")
    res = run_agora("export", "layout", "--db", str(db), "--table", "turns", "--out", str(tmp_path / "t.csv"))
    assert res.returncode == 0
    df = pd.read_csv(tmp_path / "t.csv")
    assert len(df) == len(prompts) and all(json.loads(m) == prompts[g, i] for g, i, m in zip(df.game_id, df.idx, df.messages))


def test_group_commit_inside_a_run_immediate_commit_outside(tmp_path):
    store = Store(tmp_path / "w.db")
    flushed = []
    writer = GameWriter(store, batch=3, interval=3600, before_commit=lambda: flushed.append(len(writer)))

    def save(i, status="done"):
        writer.save_game(id=f"g{i}", study="s", game="x", config={}, seats={"a": "m"}, repeat=0, seed=i, prompt_version="", status=status, outcome={"i": i}, metrics=None, error=None, turn_records=[record(0, "a", [msg(1)])])

    with writer.grouped():
        save(0, status="error")
        save(1)
        assert store.done_ids("s") == set() and len(writer) == 2  # waiting for the group
        save(2)  # the third completes a group
        assert store.done_ids("s") == {"g1", "g2"} and len(writer) == 0 and flushed == [3]
        save(0)  # a replayed game replaces its error row
        assert store.done_ids("s") == {"g1", "g2"}
    assert store.done_ids("s") == {"g0", "g1", "g2"}  # the end of the group writes the rest
    assert [t["messages"] for t in store.turns("s", game_id="g0")] == [[msg(1)]]
    save(3)  # outside a group (a game played on its own): stored at once
    assert "g3" in store.done_ids("s") and len(writer) == 0


def threads_study(url: str) -> str:
    """The fake server's model (focal, at ``url``) against always-B, 3 repeats of M1 and M2 in
    one situation for peer moves A and D."""
    grid = paper_grid(matrix=["M1", "M2"], peer_status=["leading"], margin=["marginal"], peer_move=["A", "D"])
    models = [model("remote", "openai/fake", base_url=url), scripted("b", "always-b")]
    return envy_points("threads", models, matchups="seats", seats=[{"focal": "remote", "peer": "b"}], repeats=3, grid=grid)


def test_a_run_writes_games_and_answers_on_a_worker_thread(tmp_path, write_study, fake_openai, monkeypatch):
    """Inside a run, groups of games and the cache's answers are written off the event loop's
    thread, answers before the games of their group; everything is stored and a replay from
    the cache makes no call. An in-memory database keeps every write on the caller's thread."""
    import threading

    url, _ = fake_openai()
    where: list[tuple[str, int, int]] = []
    real_games, real_answers = Store.save_games, SQLCache.write

    def save_games(self, batch):
        where.append(("games", threading.get_ident(), len(batch)))
        return real_games(self, batch)

    def write(self, rows):
        where.append(("answers", threading.get_ident(), len(rows)))
        return real_answers(self, rows)

    monkeypatch.setattr(Store, "save_games", save_games)
    monkeypatch.setattr(SQLCache, "write", write)
    study = load_study(write_study(threads_study(url)))
    store = Store(tmp_path / "t.db")
    runner = Runner(study, store, concurrency=4, cache=SQLCache(store), progress=False, probe=False)
    runner.writer.batch = 3  # several groups
    loop_thread = []

    async def go():
        loop_thread.append(threading.get_ident())
        return await runner.run()

    stats = asyncio.run(go())
    assert stats.done == 12 and len(store.done_ids("threads")) == 12
    assert runner.cache.auto_flush  # after the run the cache writes its answers by itself again
    background = [w for w in where if w[1] != loop_thread[0]]
    assert sum(n for kind, _, n in background if kind == "games") >= 9  # the last group may be written on leaving
    assert any(kind == "answers" for kind, _, _ in background)
    assert where.index(next(w for w in where if w[0] == "answers")) < where.index(next(w for w in where if w[0] == "games"))
    assert sqlite3.connect(tmp_path / "t.db").execute("select count(*) from cache").fetchone()[0] == 12 * 3
    # replayed into a fresh database from the cache: no call reaches the server
    again = Runner(study, Store(tmp_path / "u.db"), concurrency=4, cache=SQLCache(store), progress=False, probe=False)
    asyncio.run(again.run())
    assert sum(m.calls for m in again.models.values()) == 0 and again.stats.done == 12
    # in memory, a second thread would see another database: nothing moves off the caller's thread
    memory = Store(":memory:")
    assert not GameWriter(memory).write_in_background(SQLCache(memory))
    store.dispose()


def test_a_game_the_database_refuses_fails_alone_never_the_group(tmp_path, monkeypatch):
    """Issue 28, item 1: a value a store rejects fails that game (stored as an error with the
    cause, without its turns); the other games of its group are stored; a failure every game
    meets (a full disk) is raised."""
    from agorabench.store.errors import StoreError

    store = Store(tmp_path / "r.db")
    real = store.save_games

    def refusing(batch):
        if any(g["game"]["id"] == "bad" and g["turns"] for g in batch):
            raise StoreError("could not store game bad: integer out of range")
        return real(batch)

    monkeypatch.setattr(store, "save_games", refusing)
    writer = GameWriter(store, batch=3, interval=3600)

    def save(gid):
        writer.save_game(id=gid, study="s", game="x", config={}, seats={"a": "m"}, repeat=0, seed=1, prompt_version="", status="done", outcome={}, metrics=None, error=None, turn_records=[record(0, "a", [msg(1)])])

    with writer.grouped():
        save("g1")
        save("bad")
        save("g2")
    assert store.done_ids("s") == {"g1", "g2"}
    bad = [g for g in store.games("s") if g["id"] == "bad"][0]
    assert bad["status"] == "error" and "integer out of range" in bad["error"] and store.turns("s", game_id="bad") == []
    assert writer.committed == {"done": 2, "error": 1}

    monkeypatch.setattr(store, "save_games", lambda batch: (_ for _ in ()).throw(StoreError("database or disk is full")))
    writer = GameWriter(store, batch=2, interval=3600)
    with pytest.raises(StoreError, match="disk is full"):
        with writer.grouped():
            save("g3")
            save("g4")
