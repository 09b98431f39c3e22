"""The store, resume and reports on both engines: SQLite files and a real PostgreSQL server
(started by the ``postgres`` fixture from Debian's binaries). Every test here runs once per engine
and the last one checks that both engines give the same dataset."""

import json
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from agorabench.core.table import TurnRecord
from agorabench.models.base import Completion
from agorabench.store.store import SQLCache, Store
from support.helpers import ROOT, agora, server_requests
from support.studies import envy_points, model, paper_grid, scripted

#: always-B, a Fehr–Schmidt chooser and a random player on M1 and M2, peer moves A and D
SCRIPTED = envy_points("engines", [scripted("always-b"), scripted("fs", "fehr-schmidt"), scripted("rnd", "random")], grid=paper_grid(matrix=["M1", "M2"], peer_move=["A", "D"]))


def hosted_study(url: str) -> str:
    """The paper's grid: the fake server's model at ``url`` against always-B."""
    return envy_points("engines_hosted", [model("remote", "openai/fake", base_url=url), scripted("b", "always-b")])


def turn(i: int, text: str) -> TurnRecord:
    return TurnRecord(i, "focal", "choose", [{"role": "user", "content": text}], f"Answer: {i}", {"choice": "B"}, True, 0, None, 3, 1, 0.5, 0.01, False, {"x": float("nan")})


def test_store_round_trip(make_db):
    store = Store(make_db("round"))
    try:
        store.save_study("s", "envy.points", {"name": "s", "nested": {"a": [1, 2]}})
        common = dict(study="s", game="envy.points", config={"matrix": "M1"}, seats={"focal": "m"}, repeat=0, seed=2**40, prompt_version="v1", started=1.0)
        store.save_game(id="g1", status="done", outcome={"t1": 0.5, "bad": float("inf")}, metrics={"t1": 0.5}, error=None, turn_records=[turn(0, "é ü ß 漢字 \"quoted\""), turn(1, "b")], **common)
        store.save_game(id="g2", status="error", outcome=None, metrics=None, error="backend down", turn_records=[], **common)
        assert store.done_ids("s") == {"g1"}
        # a replayed game replaces its row and turns in one transaction
        store.save_game(id="g2", status="done", outcome={"t1": 1.0}, metrics={"t1": 1.0}, error=None, turn_records=[turn(0, "again")], **common)
        assert store.done_ids("s") == {"g1", "g2"}
        games = {g["id"]: g for g in store.games("s")}
        assert games["g1"]["outcome"] == {"t1": 0.5, "bad": None} and games["g1"]["seed"] == 2**40
        assert games["g1"]["n_turns"] == 2 and games["g2"]["error"] is None
        turns = store.turns("s")
        assert [(t["game_id"], t["idx"]) for t in turns] == [("g1", 0), ("g1", 1), ("g2", 0)]
        assert turns[0]["messages"][0]["content"] == "é ü ß 漢字 \"quoted\"" and turns[0]["metrics"] == {"x": None}
        assert store.studies()[0]["spec"]["nested"] == {"a": [1, 2]}

        cache = SQLCache(store)
        assert cache.get("k") is None
        cache.put("k", "openai:x", Completion("first", 3, 1, latency=0.2))
        cache.put("k", "openai:x", Completion("second", 4, 2, latency=0.1))  # replacing is allowed
        hit = cache.get("k")  # still buffered: served from memory
        assert (hit.text, hit.prompt_tokens, hit.completion_tokens) == ("second", 4, 2)
        assert SQLCache(store).get("k") is None  # not written before a flush
        cache.flush()
        hit = SQLCache(store).get("k")
        assert (hit.text, hit.prompt_tokens, hit.completion_tokens) == ("second", 4, 2)
        cache.put("k", "openai:x", Completion("third", 5, 3))
        cache.flush()  # replaces the written entry
        assert SQLCache(store).get("k").text == "third"
    finally:
        store.dispose()


def test_column_reads_match_the_row_reads(make_db):
    """``game_columns`` / ``turn_columns`` (the driver's rows, each column's result processor run
    by hand) give the values and types that ``games`` / ``turns`` give per row: booleans as bool
    (SQLite stores 0/1), floats, big integers, text and decoded JSON."""
    store = Store(make_db("columns"))
    try:
        common = dict(study="s", game="envy.points", config={"matrix": "M1", "list": [1, 2]}, seats={"focal": "m"}, repeat=0, seed=2**40, prompt_version="v1", started=1.0)
        cached = TurnRecord(1, "focal", "status", [{"role": "user", "content": "b"}], "Answer: B", None, False, 2, "no answer", 3, 1, 0.5, 0.01, True, None)
        store.save_game(id="g1", status="done", outcome={"t1": 0.5}, metrics={"t1": 0.5}, error=None, turn_records=[turn(0, "a"), cached], **common)
        store.save_game(id="g2", status="error", outcome=None, metrics=None, error="backend down", turn_records=[], **common)
        for columns, rows in ((store.game_columns("s"), store.games("s")), (store.turn_columns("s"), store.turns("s"))):
            assert columns and all(len(v) == len(rows) for v in columns.values())
            for name, values in columns.items():
                expected = [r[name] for r in rows]
                assert values == expected, name
                assert [type(v) for v in values] == [type(v) for v in expected], name
        valid = store.turn_columns("s")["valid"]
        assert valid == [True, False] and all(type(v) is bool for v in valid)
        assert store.turn_columns("s")["cached"] == [False, True]
    finally:
        store.dispose()

def test_run_resume_export_and_report(make_db, write_study, tmp_path, capsys):
    """The command line in this process: the store and its engine are under test, not the
    interpreter (the killed study below runs as its own process)."""
    path = write_study(SCRIPTED)
    db = make_db("scripted")
    rc, out, err = agora(capsys, "run", str(path), "--db", db, "--concurrency", "4", "--quiet")
    assert rc == 0, err
    assert "96 games, 0 already done, 96 played, 0 errors" in out
    rc, out, err = agora(capsys, "run", str(path), "--db", db, "--quiet")
    assert "96 already done, 0 played" in out
    csv = tmp_path / "games.csv"
    assert agora(capsys, "export", str(path), "--db", db, "--table", "games", "--format", "csv", "--out", str(csv))[0] == 0
    games = pd.read_csv(csv)
    assert len(games) == 96 and (games[(games.model_focal == "always-b") & (games.matrix == "M1")].t1 == 0.125).all()
    rc, out, err = agora(capsys, "report", str(path), "--db", db, "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "T1 self-first on M1" in html and "Played and invalid rates" in html


def test_killed_study_resumes_without_replaying_finished_games(make_db, write_study, fake_openai, capsys):
    url, stats = fake_openai("--latency", "0.05")
    path = write_study(hosted_study(url))
    db = make_db("killed")
    proc = subprocess.Popen([sys.executable, "-m", "agorabench", "run", str(path), "--db", db, "--concurrency", "2", "--quiet"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 90
    while time.time() < deadline:
        time.sleep(0.3)
        try:
            if len(_finished(db)) >= 10:
                break
        except Exception:  # the schema may not exist yet
            continue
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _finished(db)
    assert 10 <= len(before) < 96
    calls_before = server_requests(stats)
    rc, out, err = agora(capsys, "run", str(path), "--db", db, "--quiet")  # the resume: in this process
    assert rc == 0, err
    assert f"96 games, {len(before)} already done, {96 - len(before)} played" in out
    after = _finished(db)
    assert len(after) == 96 and all(after[g] == t for g, t in before.items())
    # only unfinished games called the model again: at most 3 calls each (plus the killed in-flight ones)
    assert server_requests(stats) - calls_before <= 3 * (96 - len(before))


def _finished(db: str) -> dict[str, float]:
    store = Store(db)
    try:
        return {g["id"]: g["finished"] for g in store.games() if g["status"] == "done"}
    finally:
        store.dispose()


def test_both_engines_hold_the_same_dataset(write_study, tmp_path, postgres, capsys):
    """The same study on SQLite and on PostgreSQL: identical games (outcomes, metrics, seeds)."""
    path = write_study(SCRIPTED)
    dbs = [str(tmp_path / "same.db"), postgres.new_database()]
    tables = []
    for db in dbs:
        assert agora(capsys, "run", str(path), "--db", db, "--quiet")[0] == 0
        store = Store(db)
        rows = sorted(({k: json.dumps(g[k], sort_keys=True) for k in ("id", "config", "seats", "seed", "status", "outcome", "metrics", "n_turns")} for g in store.games()), key=lambda r: r["id"])
        turns = [(t["game_id"], t["idx"], t["raw"], json.dumps(t["action"], sort_keys=True)) for t in store.turns()]
        store.dispose()
        tables.append((rows, turns))
    assert len(tables[0][0]) == 96 and tables[0] == tables[1]


@pytest.mark.parametrize("url", ["postgresql://postgres@127.0.0.1:1/x", "postgres://postgres@127.0.0.1:1/x"])
def test_postgres_urls_use_psycopg3(url):
    from agorabench.store.store import _url

    assert _url(url).startswith("postgresql+psycopg://postgres@127.0.0.1:1/x")


def test_processes_starting_one_study_at_once_do_not_clash(make_db):
    """Ray shares (or two runs) start the same study together: each replaces the study row, and
    a replace that meets another's fresh row tries again instead of failing the share."""
    url = make_db("race")
    code = (
        "import sys; from agorabench.store.store import Store\n"
        "s = Store(sys.argv[1])\n"
        "for i in range(30): s.save_study('raced', 'envy.points', {'name': 'raced', 'i': i})\n"
    )
    Store(url).save_study("raced", "envy.points", {"name": "raced"})  # tables exist before the race
    procs = [subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    assert [s["name"] for s in Store(url).studies()] == ["raced"]
