"""Local multi-process executor (``agora run --executor processes --workers N``): the study's
games dealt into N shares as for Ray, each played by a local process, all writing one SQLite
file or one PostgreSQL database. The dataset is that of a one-process run; a worker process
killed mid-run fails its share (no retry), the others finish, its claims are released, and a
resume plays the rest."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from agorabench.core.executors import Share
from agorabench.core.study import load_study
from agorabench.store.store import Store
from support.helpers import ROOT, one_line_error, run_agora
from support.studies import envy_points, model, paper_grid, scripted

#: The outcome columns: everything a game stored except when it finished.
COLUMNS = ("id", "status", "seats", "config", "outcome", "metrics", "n_turns", "n_invalid")


def games(db: str | Path) -> list[tuple]:
    """The outcome table in id order, JSON values as canonical text (so both engines compare)."""
    store = Store(str(db), read_only=True)
    try:
        rows = store.games()
    finally:
        store.dispose()
    return [tuple(json.dumps(r[c], sort_keys=True) if isinstance(r[c], (dict, list)) else r[c] for c in COLUMNS) for r in rows]


def claims(db: str) -> int:
    store = Store(db, read_only=True)
    try:
        with store.engine.connect() as conn:
            return conn.exec_driver_sql("select count(*) from claims").scalar()
    finally:
        store.dispose()


def query(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def finished(db: Path) -> dict[str, float]:
    return dict(query(db, "select id, finished from games where status = 'done'"))


def test_processes_give_the_one_process_dataset_and_a_second_run_plays_nothing(tmp_path, make_db):
    path = tmp_path / "fanout.toml"
    path.write_text(envy_points("fanout", [scripted("self-max"), scripted("random")], seed=3))
    one, fan = tmp_path / "one.db", make_db("fan")  # an SQLite file, or a PostgreSQL URL
    res = run_agora("run", str(path), "--db", str(one), "--quiet", timeout=120)
    assert res.returncode == 0, res.stderr

    res = run_agora("run", str(path), "--db", str(fan), "--quiet", "--executor", "processes", "--workers", "2", timeout=120)
    assert res.returncode == 0, res.stderr
    assert "96 games, 0 already done, 96 played, 0 errors" in res.stdout and "; processes 2" in res.stdout, res.stdout
    a, b = games(one), games(fan)
    assert len(a) == 96 and a == b and json.loads(a[0][4])  # real outcomes, not empty rows
    assert claims(fan) == 0

    res = run_agora("run", str(path), "--db", str(fan), "--quiet", "--executor", "processes", "--workers", "2", timeout=120)
    assert res.returncode == 0, res.stderr
    assert "96 games, 96 already done, 0 played, 0 errors" in res.stdout, res.stdout
    assert games(fan) == a


def children(pid: int) -> set[int]:
    return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def test_a_killed_worker_process_fails_its_share_and_a_resume_completes_the_study(tmp_path, fake_openai):
    url, _ = fake_openai("--latency", "0.2")
    remote = model("remote", "openai/fake", base_url=url, max_concurrency=64)
    path = tmp_path / "fanout.toml"
    path.write_text(envy_points("fanout", [remote, scripted("random")], grid=paper_grid(peer_move=["A", "B"])))  # 48 games
    one, fan = tmp_path / "one.db", tmp_path / "fan.db"
    res = run_agora("run", str(path), "--db", str(one), "--quiet", "--concurrency", "32", timeout=120)
    assert res.returncode == 0, res.stderr
    assert len(games(one)) == 48

    cmd = [sys.executable, "-m", "agorabench", "run", str(path), "--db", str(fan), "--quiet", "--executor", "processes", "--workers", "2", "--concurrency", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        victim, deadline = None, time.time() + 90
        while victim is None:  # a worker process holding claims after a few games are stored
            assert proc.poll() is None and time.time() < deadline, proc.communicate()[1][-3000:]
            time.sleep(0.2)
            try:
                held = query(fan, "select owner from claims")
                done = len(finished(fan))
            except sqlite3.OperationalError:  # the database is not created yet
                continue
            for (owner,) in sorted(set(held)):
                pid = int(owner.split(":")[1])
                if done >= 4 and sum(o == owner for (o,) in held) >= 2 and pid in children(proc.pid):
                    victim = owner, pid
                    break
        owner, pid = victim
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    done = finished(fan)
    missing = 48 - len(done)
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert "agora: error: 1 process share(s) failed" in err and "killed (SIGKILL)" in err and f"{missing} game(s) not played" in err, err
    assert f"48 games, 0 already done, {len(done)} played" in out and "; processes 1" in out, out
    killed = int(owner.rsplit("s", 1)[1])  # the share's tag ends with its index
    shares = [[spec.id for spec in Share(i, 2)(load_study(str(path)))] for i in range(2)]
    assert set(shares[1 - killed]) <= set(done) and 0 < missing < len(shares[killed])  # the other share finished
    assert claims(str(fan)) == 0  # the dead share's claims are released

    res = run_agora("run", str(path), "--db", str(fan), "--quiet", "--executor", "processes", "--workers", "2", "--concurrency", "16", timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"48 games, {len(done)} already done, {missing} played, 0 errors" in res.stdout, res.stdout
    after = finished(fan)
    assert len(after) == 48 and all(after[g] == t for g, t in done.items())  # nothing finished was replayed
    assert games(fan) == games(one)


def test_bad_process_options_get_one_line(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(envy_points("bad", [scripted("self-max"), scripted("random")]))
    db = str(tmp_path / "s.db")
    res = run_agora("run", str(path), "--db", db, "--executor", "processes", "--workers", "0", timeout=60)
    one_line_error(res.returncode, res.stderr, "--workers", "at least 1")
    res = run_agora("run", str(path), "--db", db, "--executor", "processes", "--budget", "1", timeout=60)
    one_line_error(res.returncode, res.stderr, "--budget", "--executor processes")
    assert not Path(db).exists() or games(Path(db)) == []


def test_shares_that_raise_are_reported_and_leave_their_games(tmp_path):
    """A share whose process raised (here: the response cache named is a folder) is listed with
    its exception in one line; its games are counted as not played and nothing is claimed."""
    path = tmp_path / "s.toml"
    path.write_text(envy_points("raise", [scripted("self-max"), scripted("random")]))
    db, folder = tmp_path / "s.db", tmp_path / "cache"
    folder.mkdir()
    res = run_agora("run", str(path), "--db", str(db), "--quiet", "--executor", "processes", "--workers", "2", "--cache", str(folder), timeout=120)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "96 games, 0 already done, 0 played, 0 errors" in res.stdout and "; processes 0" in res.stdout, res.stdout
    assert "agora: error: 2 process share(s) failed (share 1 of 2: StoreError: " in res.stderr and "is a folder" in res.stderr, res.stderr
    assert "96 game(s) not played" in res.stderr, res.stderr
    assert games(db) == [] and claims(str(db)) == 0
