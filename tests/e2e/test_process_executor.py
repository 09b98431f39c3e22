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

import pytest

from agorabench.core.executors import Share
from agorabench.core.study import load_study
from agorabench.store.store import Store
from support.helpers import ROOT, agora, free_port, one_line_error, run_agora, server_requests
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


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory) -> tuple[Path, Path]:
    """A scripted study (96 games) and the database of its one-process run (in this process),
    made once for both stores."""
    from agorabench.cli import main

    tmp = tmp_path_factory.mktemp("scripted")
    path, one = tmp / "fanout.toml", tmp / "one.db"
    path.write_text(envy_points("fanout", [scripted("self-max"), scripted("random")], seed=3))
    assert main(["run", str(path), "--db", str(one), "--quiet"]) == 0
    return path, one


def test_processes_give_the_one_process_dataset_and_a_second_run_plays_nothing(scripted_run, make_db, capsys):
    """The driver runs in the test's process (its worker processes are spawned as from the
    command line: fresh interpreters); the kills and signals below run it as its own process."""
    path, one = scripted_run
    fan = make_db("fan")  # an SQLite file, or a PostgreSQL URL
    rc, out, err = agora(capsys, "run", str(path), "--db", str(fan), "--quiet", "--executor", "processes", "--workers", "2")
    assert rc == 0, err
    assert "96 games, 0 already done, 96 played, 0 errors" in out and "; processes 2" in out, out
    a, b = games(one), games(fan)
    assert len(a) == 96 and a == b and json.loads(a[0][4])  # real outcomes, not empty rows
    assert claims(fan) == 0

    rc, out, err = agora(capsys, "run", str(path), "--db", str(fan), "--quiet", "--executor", "processes", "--workers", "2")  # nothing to deal: no worker starts
    assert rc == 0, err
    assert "96 games, 96 already done, 0 played, 0 errors" in out, out
    assert games(fan) == a


def children(pid: int) -> set[int]:
    return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def test_a_killed_worker_process_fails_its_share_and_a_resume_completes_the_study(tmp_path, fake_openai, capsys):
    url, _ = fake_openai("--latency", "0.2")
    remote = model("remote", "openai/fake", base_url=url, max_concurrency=64)
    path = tmp_path / "fanout.toml"
    path.write_text(envy_points("fanout", [remote, scripted("random")], grid=paper_grid(peer_move=["A", "B"])))  # 48 games
    one, fan = tmp_path / "one.db", tmp_path / "fan.db"
    rc, _, err = agora(capsys, "run", str(path), "--db", str(one), "--quiet", "--concurrency", "32")  # one process: this one
    assert rc == 0, err
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

    rc, out, err = agora(capsys, "run", str(path), "--db", str(fan), "--quiet", "--executor", "processes", "--workers", "2", "--concurrency", "16")  # the resume: driver here
    assert rc == 0, err
    assert f"48 games, {len(done)} already done, {missing} played, 0 errors" in out, out
    after = finished(fan)
    assert len(after) == 48 and all(after[g] == t for g, t in done.items())  # nothing finished was replayed
    assert games(fan) == games(one)


def test_bad_process_options_get_one_line(tmp_path, capsys):
    """Refused before any worker starts: the command line runs in the test's process."""
    path = tmp_path / "s.toml"
    path.write_text(envy_points("bad", [scripted("self-max"), scripted("random")]))
    db = str(tmp_path / "s.db")
    one_line_error(*agora(capsys, "run", str(path), "--db", db, "--executor", "processes", "--workers", "0")[::2], "--workers", "at least 1")
    one_line_error(*agora(capsys, "run", str(path), "--db", db, "--executor", "processes", "--budget", "1")[::2], "--budget", "--executor processes")
    assert not Path(db).exists() or games(Path(db)) == []


def test_shares_that_raise_are_reported_and_leave_their_games(tmp_path):
    """A share whose process raised is listed with its exception in one line; its games are
    counted as not played and nothing is claimed. The fault is planted in the worker processes
    only: a ``sitecustomize`` on their path makes the runner raise (the driver never runs it)."""
    path = tmp_path / "s.toml"
    path.write_text(envy_points("raise", [scripted("self-max"), scripted("random")]))
    db, plant = tmp_path / "s.db", tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(
        "import agorabench.core.runner as r\n"
        "async def broken(self, *a, **k):\n"
        "    raise RuntimeError('planted in the worker')\n"
        "r.Runner.run = broken\n"
    )
    env = {"PYTHONPATH": os.pathsep.join(x for x in (str(plant), os.environ.get("PYTHONPATH", "")) if x)}
    res = run_agora("run", str(path), "--db", str(db), "--quiet", "--executor", "processes", "--workers", "2", timeout=120, env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "96 games, 0 already done, 0 played, 0 errors" in res.stdout and "; processes 0" in res.stdout, res.stdout
    assert "agora: error: 2 process share(s) failed (share 1 of 2: RuntimeError: planted in the worker" in res.stderr, res.stderr
    assert "96 game(s) not played" in res.stderr, res.stderr
    assert games(db) == [] and claims(str(db)) == 0


def test_a_bad_cache_is_refused_before_any_worker_starts(tmp_path, capsys):
    """``--cache`` naming a folder or a file that is no database: one line and exit status 2,
    as with one process, before a worker process starts (none of them says anything). The
    command line runs in the test's process (its stderr is all there is: no worker's)."""
    path = tmp_path / "s.toml"
    path.write_text(envy_points("badcache", [scripted("self-max"), scripted("random")]))
    db, folder, text = tmp_path / "s.db", tmp_path / "cache", tmp_path / "notes.db"
    folder.mkdir()
    text.write_text("these are my notes, not a database\n" * 200)
    for cache in (folder, text):
        for executor in ("async", "processes"):
            rc, _, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--executor", executor, "--workers", "2", "--cache", str(cache))
            assert "share" not in one_line_error(rc, err, cache.name), executor
    assert text.read_text().startswith("these are my notes")  # never written over
    assert not db.exists() or games(db) == []
    one_line_error(*agora(capsys, "run", str(path), "--db", str(db), "--executor", "processes", "--no-cache", "--cache", str(tmp_path / "c.db"))[::2], "--no-cache", "--cache")


def test_no_cache_and_no_probe_reach_the_worker_processes(tmp_path, fake_openai, capsys):
    """``--no-cache``: the workers store no response and read none (every decision a call, as
    with one process); ``--no-probe``: a model that is down is not probed before the first
    game, so each game records the failure instead of the run stopping at the probe."""
    url, stats = fake_openai()
    remote = model("remote", "openai/fake", base_url=url, max_concurrency=16)
    path = tmp_path / "s.toml"
    path.write_text(envy_points("nocache", [remote, scripted("random")]))
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(first), "--quiet", "--executor", "processes", "--workers", "2", "--no-cache")  # driver here, workers spawned
    assert rc == 0, err
    assert " 0 cache hits" in out, out
    assert query(first, "select count(*) from cache") == [(0,)]
    calls = server_requests(stats)
    assert calls >= 96
    # the same study into another store, naming the first store as cache: nothing to reuse
    rc, out, err = agora(capsys, "run", str(path), "--db", str(second), "--quiet", "--executor", "processes", "--workers", "2", "--cache", str(first))
    assert rc == 0 and " 0 cache hits" in out, out + err
    assert server_requests(stats) >= 2 * calls - 8  # (a probe call or two aside)

    down = model("down", "openai/fake", base_url=f"http://127.0.0.1:{free_port()}/v1", max_concurrency=4)
    one_cell = paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=["A"])
    path.write_text(envy_points("down", [down, scripted("random")], grid=one_cell))
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "c.db"), "--quiet", "--executor", "processes", "--workers", "2")  # stops at the probe, in the driver
    one_line_error(rc, err, "model 'down'", "no game was started; --no-probe skips this check")
    assert games(tmp_path / "c.db") == []
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "d.db"), "--quiet", "--executor", "processes", "--workers", "2", "--no-probe")
    assert rc == 1 and "Traceback" not in err, err
    stored = games(tmp_path / "d.db")
    assert any(g[1] == "error" for g in stored) and "connection refused" in err, (stored, err)


def test_an_interrupted_driver_ends_its_workers_and_frees_their_games(tmp_path, fake_openai, capsys):
    """Ctrl-C (here SIGTERM, which stops a command the same way) to the driver alone: it ends the
    worker processes still playing, releases their claims (the next run plays those games at
    once, not after the claims expire), says how to resume, and exits with status 130."""
    url, _ = fake_openai("--latency", "0.3")
    remote = model("remote", "openai/fake", base_url=url, max_concurrency=8)
    path = tmp_path / "s.toml"
    path.write_text(envy_points("stop", [remote, scripted("random")], grid=paper_grid(peer_move=["A", "B"])))  # 48 games
    db = tmp_path / "s.db"
    cmd = [sys.executable, "-m", "agorabench", "run", str(path), "--db", str(db), "--quiet", "--executor", "processes", "--workers", "2", "--concurrency", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        while True:  # both workers hold claims
            assert proc.poll() is None and time.time() < deadline, proc.communicate()[1][-3000:]
            time.sleep(0.2)
            try:
                if len({o for (o,) in query(db, "select owner from claims")}) == 2:
                    break
            except sqlite3.OperationalError:
                continue
        workers = children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, (proc.returncode, err)
    assert workers and not any(Path(f"/proc/{pid}").exists() and "agora" in Path(f"/proc/{pid}/cmdline").read_text() for pid in workers)
    assert claims(str(db)) == 0
    done = len(finished(db))
    assert done < 48
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--executor", "processes", "--workers", "2", "--concurrency", "8")  # the resume: driver here
    assert rc == 0 and f"48 games, {done} already done, {48 - done} played, 0 errors" in out, (out, err)
