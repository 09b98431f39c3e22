"""Ray fan-out: a study's games spread over Ray workers give the dataset of a one-process run,
a run whose driver is killed resumes without replaying finished games, and on PostgreSQL (one
store, one response cache) a killed worker's share is started again by Ray, and when Ray's
retries are spent the run reports the games it did not play and a resume plays them.

Ray and the fake OpenAI server run inside a private network and PID namespace (``unshare``)
with only loopback: Ray binds no outside address, and killing the namespace's first process ends
every process of the run (driver, Ray's daemons and workers, the server). The session's
PostgreSQL server listens on the outer loopback, which the namespace cannot reach; the workers
reach it through its Unix socket (a file, which network namespaces do not separate)."""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from agorabench.core.executors import Share
from agorabench.core.study import load_study
from agorabench.store.store import Store
from support.helpers import FAKE_OPENAI, ROOT, free_port, wait_http
from support.studies import envy_points, model, scripted


def _unavailable(why: str) -> None:
    """Skip on a user's machine; CI must run these tests (its setup installs Ray, runs as root)."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the Ray tests: {why}")
    pytest.skip(why, allow_module_level=True)


if importlib.util.find_spec("ray") is None:  # found, not imported: the runs import it, not this process
    _unavailable("Ray is not installed (pip install 'agorabench[ray]')")


def fanout_study(port: int) -> str:
    """The paper's grid: the fake server's model (at ``port``) against a random player."""
    remote = model("remote", "openai/fake", base_url=f"http://127.0.0.1:{port}/v1", max_concurrency=64)
    return envy_points("fanout", [remote, scripted("random")])

#: Inside the namespace: start the fake server, wait for it, run the CLI, stop the server.
LAUNCH = """
import subprocess, sys, time, urllib.request
port, latency, latency_file, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
server = subprocess.Popen([sys.executable, {fake!r}, port, "--latency", latency, "--latency-file", latency_file], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(300):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{{port}}/v1/models", timeout=1); break
    except Exception:
        time.sleep(0.1)
code = subprocess.call([sys.executable, "-m", "agorabench", *args])
server.terminate()
sys.exit(code)
"""


#: Ray's daemons as the tests need them: no idle default workers started ahead (each share's
#: worker has its own runtime environment and never takes one), no usage report.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "RAY_enable_worker_prestart": "0", "RAY_prestart_worker_first_driver": "0"}


def in_namespace(port: int, latency: float, *args: str, latency_file: Path | None = None) -> subprocess.Popen:
    """The CLI with ``args`` in a private namespace, beside the fake server answering after
    ``latency`` seconds (or, once ``latency_file`` exists, after the seconds written in it)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        _unavailable("needs unshare and root for a private network namespace (see ../shared/STACK.md)")
    launch = LAUNCH.format(fake=str(FAKE_OPENAI))
    env = {**os.environ, **RAY_ENV}
    cmd = ["unshare", "-n", "-p", "-f", "--mount-proc", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", sys.executable, "-c", launch, str(port), str(latency), str(latency_file or ""), *args]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def namespace_init(proc: subprocess.Popen) -> int:
    """The first process of the new PID namespace (unshare's forked child)."""
    for _ in range(100):
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise RuntimeError("the namespace did not start")


def games(db: str) -> pd.DataFrame:
    """The outcome table, JSON columns as canonical text so that both engines compare."""
    store = Store(db, read_only=True)
    try:
        rows = store.games("fanout")
    finally:
        store.dispose()
    cols = ["id", "status", "seats", "config", "outcome", "metrics", "n_turns", "n_invalid"]
    df = pd.DataFrame(rows, columns=[*cols, "finished"])
    for c in ("seats", "config", "outcome", "metrics"):
        df[c] = [json.dumps(v, sort_keys=True) for v in df[c]]
    return df


def finished(db: str) -> dict[str, float]:
    df = games(db)
    return dict(zip(df.id[df.status == "done"], df.finished[df.status == "done"]))


def done_count(db: str) -> int:
    """The games stored as done (what the waits poll: one query, no table built)."""
    return table(db, "select count(*) from games where study = 'fanout' and status = 'done'")[0][0]


def table(db: str, sql: str) -> list[tuple]:
    store = Store(db, read_only=True)
    try:
        with store.engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql(sql)]
    finally:
        store.dispose()


def wait_for(condition, proc: subprocess.Popen, seconds: float = 240) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        try:
            if condition():
                return
        except Exception:  # the database is not created yet
            pass
        time.sleep(0.1)  # a poll is a few milliseconds; Ray's daemons idle while the test waits
    raise AssertionError("timed out")


def share_workers(init: int) -> dict[int, int]:
    """Ray worker processes of the namespace playing a share (Ray titles them after the task):
    their pid inside the namespace (as claims name it) -> their pid here."""
    ns, found = os.readlink(f"/proc/{init}/ns/pid"), {}
    for d in Path("/proc").iterdir():
        try:
            if not d.name.isdigit() or os.readlink(d / "ns" / "pid") != ns or not (d / "cmdline").read_bytes().startswith(b"ray::play_share"):
                continue
            nspid = next(line for line in (d / "status").read_text().splitlines() if line.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        found[int(nspid.split()[-1])] = int(d.name)
    return found


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The study file, the fake server's port, and the one-process run's database. The
    one-process run needs no Ray and no namespace: it runs in this process against the fake
    server on this machine's loopback, at a port that is free here (each namespace has a
    loopback of its own, where the runs under test start their own server at the same port)."""
    from agorabench.cli import main

    tmp = tmp_path_factory.mktemp("fanout")
    port = free_port()
    path = tmp / "fanout.toml"
    path.write_text(fanout_study(port))
    one = str(tmp / "one.db")
    server = subprocess.Popen([sys.executable, str(FAKE_OPENAI), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", timeout=30, proc=server)
        assert main(["run", str(path), "--db", one, "--quiet"]) == 0
    finally:
        server.terminate()
        server.wait(timeout=10)
    return path, port, one


def test_ray_run_matches_one_process_run_and_resumes_after_a_driver_kill(baseline, tmp_path):
    path, port, one = baseline
    fan = str(tmp_path / "fan.db")

    proc = in_namespace(port, 0.3, "run", str(path), "--db", fan, "--quiet", "--executor", "ray", "--workers", "2", "--concurrency", "2")
    init = namespace_init(proc)
    wait_for(lambda: done_count(fan) >= 10, proc)
    os.kill(init, signal.SIGKILL)  # the driver, Ray and the server all end with the namespace
    proc.communicate(timeout=60)
    before = finished(fan)
    assert 10 <= len(before) < 96

    proc = in_namespace(port, 0.0, "run", str(path), "--db", fan, "--quiet", "--executor", "ray", "--workers", "2")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"96 games, {len(before)} already done, {96 - len(before)} played, 0 errors" in out and "ray workers 2" in out, out
    after = finished(fan)
    assert len(after) == 96 and all(after[g] == t for g, t in before.items())  # nothing finished was replayed
    a, b = games(one).drop(columns="finished"), games(fan).drop(columns="finished")
    assert len(a) == 96 and a.equals(b)
    assert json.loads(a.outcome[0])  # real outcomes, not empty rows


def test_ray_on_postgresql_restarts_a_killed_worker_then_reports_its_share_and_resumes(baseline, postgres, tmp_path):
    path, port, one = baseline
    fast = tmp_path / "latency"  # written once the kills are done: the rest of the run at full speed
    url = postgres.new_database()  # from here: TCP on this namespace's loopback
    inside = f"postgresql://postgres@/{url.rsplit('/', 1)[1]}?host={postgres.dir}&port={postgres.port}"  # the Unix socket
    claims = lambda: table(url, "select owner, game_id from claims")  # noqa: E731

    proc = in_namespace(port, 0.3, "run", str(path), "--db", inside, "--quiet", "--executor", "ray", "--workers", "2", "--concurrency", "2", "--worker-retries", "1", latency_file=fast)
    init = namespace_init(proc)

    def worker_with_claims(exclude: set[str], tag: str = "") -> tuple[str, int] | None:
        """(owner, pid here) of a live share worker (whose owner ends with ``tag``) holding at
        least 3 claims, so it has played games (claims are kept until a share ends)."""
        workers, held = share_workers(init), {}
        for owner, _ in claims():
            held[owner] = held.get(owner, 0) + 1
        for owner, n in sorted(held.items()):
            pid = int(owner.split(":")[1])
            if owner not in exclude and owner.endswith(tag) and n >= 3 and pid in workers:
                return owner, workers[pid]
        return None

    wait_for(lambda: done_count(url) >= 6 and worker_with_claims(set()), proc)
    first, pid = worker_with_claims(set())
    tag = first.split(":")[3]
    os.kill(pid, signal.SIGKILL)
    # Ray starts the share again; the new attempt, with the same tag, drops the dead one's claims.
    wait_for(lambda: worker_with_claims({first}, ":" + tag), proc)
    assert first not in {owner for owner, _ in claims()}
    second, pid = worker_with_claims({first}, ":" + tag)
    os.kill(pid, signal.SIGKILL)  # Ray's one retry is spent: the driver gives up on this share
    fast.write_text("0")
    out, err = proc.communicate(timeout=300)
    done = finished(url)
    missing = 96 - len(done)
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert "agora: error: 1 Ray share(s) failed" in err and f"{missing} game(s) not played" in err, (out, err)
    assert f"96 games, 0 already done, {len(done)} played" in out, out
    shares = [[spec.id for spec in Share(i, 2)(load_study(str(path)))] for i in range(2)]  # the deal (tests/core/test_executor_shares.py)
    killed = int(tag.rpartition("s")[2])
    assert set(shares[1 - killed]) <= set(done) and 0 < missing < len(shares[killed])  # the other share finished
    assert claims() == []  # the dead share's claims are released: nothing holds the resume back

    proc = in_namespace(port, 0.0, "run", str(path), "--db", inside, "--quiet", "--executor", "ray", "--workers", "2")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"96 games, {len(done)} already done, {missing} played, 0 errors" in out, out
    after = finished(url)
    assert len(after) == 96 and all(after[g] == t for g, t in done.items())  # nothing finished was replayed
    a, b = games(one).drop(columns="finished"), games(url).drop(columns="finished")
    assert a.equals(b)  # the dataset of the one-process run
    # one response cache, in PostgreSQL: every answer the study needed, each once
    keys = lambda db: sorted(k for (k,) in table(db, "select key from cache"))  # noqa: E731
    assert keys(url) == keys(one) and len(keys(one)) > 0
    assert claims() == []


def test_ray_summary_counts_the_games_a_killed_attempt_stored(baseline, postgres, tmp_path):
    """A worker killed once: Ray starts its share again, which skips the games its dead attempt
    stored. Those count as played too, so the summary adds up to the games in the database
    (it once said "0 already done, 378 played" for 576 stored games)."""
    path, port, _ = baseline
    url = postgres.new_database()
    inside = f"postgresql://postgres@/{url.rsplit('/', 1)[1]}?host={postgres.dir}&port={postgres.port}"
    fast = tmp_path / "latency"  # written after the kill: the rest of the run at full speed
    proc = in_namespace(port, 0.3, "run", str(path), "--db", inside, "--quiet", "--executor", "ray", "--workers", "2", "--concurrency", "2", "--worker-retries", "2", latency_file=fast)
    init = namespace_init(proc)

    def busy_worker() -> int | None:
        workers, held = share_workers(init), {}
        for owner, _ in table(url, "select owner, game_id from claims"):
            held[owner] = held.get(owner, 0) + 1
        for owner, n in sorted(held.items()):
            pid = int(owner.split(":")[1])
            if n >= 3 and pid in workers:
                return workers[pid]
        return None

    wait_for(lambda: done_count(url) >= 6 and busy_worker(), proc)
    os.kill(busy_worker(), signal.SIGKILL)
    fast.write_text("0")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    stored = len(finished(url))
    assert stored == 96 and "96 games, 0 already done, 96 played, 0 errors" in out, out
