"""Ray fan-out: a study's games spread over Ray workers give the dataset of a one-process run,
and a run whose driver is killed resumes without replaying finished games.

Ray and the fake OpenAI server run inside a private network and PID namespace (``unshare``)
with only loopback: Ray binds no outside address, and killing the namespace's first process
ends every process of the run (driver, Ray's daemons and workers, the server)."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from agorabench.core.executors import deal
from agorabench.core.study import GameSpec
from conftest import ROOT

pytest.importorskip("ray")

STUDY = """
name = "fanout"
game = "envy.points"
matchups = "ordered_pairs"
[grid]
matrix = ["M1", "M2", "M3"]
peer_status = ["leading", "lagging"]
margin = ["marginal", "significant"]
peer_move = ["A", "B", "C", "D"]
[[models]]
name = "remote"
spec = "openai/fake"
base_url = "http://127.0.0.1:{port}/v1"
max_concurrency = 64
[[models]]
name = "random"
spec = "strategy/random"
"""

#: Inside the namespace: start the fake server, wait for it, run the CLI, stop the server.
LAUNCH = """
import subprocess, sys, time, urllib.request
port, latency, args = sys.argv[1], sys.argv[2], sys.argv[3:]
server = subprocess.Popen([sys.executable, {fake!r}, port, "--latency", latency], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(300):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{{port}}/v1/models", timeout=1); break
    except Exception:
        time.sleep(0.1)
code = subprocess.call([sys.executable, "-m", "agorabench", *args])
server.terminate()
sys.exit(code)
"""


def in_namespace(port: int, latency: float, *args: str) -> subprocess.Popen:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare and root for a private network namespace (see ../shared/STACK.md)")
    launch = LAUNCH.format(fake=str(ROOT / "tests" / "fake_openai.py"))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    cmd = ["unshare", "-n", "-p", "-f", "--mount-proc", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", sys.executable, "-c", launch, str(port), str(latency), *args]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def namespace_init(proc: subprocess.Popen) -> int:
    """The first process of the new PID namespace (unshare's forked child)."""
    for _ in range(100):
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise RuntimeError("the namespace did not start")


def games(db: Path) -> pd.DataFrame:
    df = pd.read_sql("select id, status, seats, config, outcome, metrics, n_turns, n_invalid from games order by id", sqlite3.connect(db))
    return df


def test_deal_spreads_games_round_robin_in_id_order():
    specs = [GameSpec(id=f"g{i}", game="x", config={}, seats={}, repeat=0, seed=i) for i in (3, 0, 9, 1, 7, 4, 8, 2, 6, 5)]
    shares = deal(specs, 4)  # in id order, not study order
    assert shares == [["g0", "g4", "g8"], ["g1", "g5", "g9"], ["g2", "g6"], ["g3", "g7"]]
    assert deal(specs[:2], 4) == [["g0"], ["g3"]]  # no empty shares


def test_ray_run_matches_one_process_run_and_resumes_after_a_driver_kill(tmp_path):
    port = 18_000 + os.getpid() % 1000  # any port: the namespace has its own loopback
    path = tmp_path / "fanout.toml"
    path.write_text(STUDY.format(port=port))
    one, fan = tmp_path / "one.db", tmp_path / "fan.db"

    proc = in_namespace(port, 0.0, "run", str(path), "--db", str(one), "--quiet")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err

    proc = in_namespace(port, 0.3, "run", str(path), "--db", str(fan), "--quiet", "--executor", "ray", "--workers", "2", "--concurrency", "2")
    init = namespace_init(proc)
    deadline, before = time.time() + 240, 0
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.3)
        try:
            before = sqlite3.connect(fan).execute("select count(*) from games where status = 'done'").fetchone()[0]
        except sqlite3.Error:
            continue
        if before >= 10:
            break
    os.kill(init, signal.SIGKILL)  # the driver, Ray and the server all end with the namespace
    proc.communicate(timeout=60)
    finished = dict(sqlite3.connect(fan).execute("select id, finished from games where status = 'done'").fetchall())
    assert 10 <= len(finished) < 96

    proc = in_namespace(port, 0.0, "run", str(path), "--db", str(fan), "--quiet", "--executor", "ray", "--workers", "2")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"96 games, {len(finished)} already done, {96 - len(finished)} played, 0 errors" in out and "ray workers 2" in out, out
    after = dict(sqlite3.connect(fan).execute("select id, finished from games where status = 'done'").fetchall())
    assert len(after) == 96 and all(after[g] == t for g, t in finished.items())  # nothing finished was replayed
    a, b = games(one), games(fan)
    assert len(a) == 96 and a.equals(b)
    assert json.loads(a.outcome[0])  # real outcomes, not empty rows
