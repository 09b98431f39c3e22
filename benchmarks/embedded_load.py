"""The embedded model on an idle and on a busy machine: wall time and peak memory of a study.

Each run is a fresh ``agora run`` process (new SQLite file, so nothing comes from the response
cache) of the demo study or of a reduced one (the model against one scripted strategy, 12
games). A busy machine is simulated with N busy-loop processes, each pinned to one usable core.
Variants: the sources of this checkout ("after"), the sources of an older revision
(``--before REV``: extracted with ``git archive``) and extra environment settings
(``--env LABEL:KEY=VALUE,KEY=VALUE``). Runs alternate between variants, so a change in the
machine's other load affects them alike. Every run's stored replies (raw text and action of
every turn) are hashed: the same prompts must give the same answers in every variant.

    .venv/bin/python benchmarks/embedded_load.py --before HEAD~1 --busy 0 2
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

REDUCED = """
name = "demo_reduced"
game = "envy.points"
matchups = "ordered_pairs"
seed = 0

[grid]
matrix = {matrices}
peer_status = ["leading", "lagging"]
margin = ["significant"]
peer_move = ["B"]

[[models]]
name = "smollm2-135m"
spec = "local"
display_name = "SmolLM2-135M"
max_tokens = 128
constrained = true

[[models]]
name = "self-max"
spec = "strategy/self-max"
"""


@dataclass
class Variant:
    """A way to run the study: which sources, which extra environment."""

    label: str
    src: Path
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Result:
    variant: str
    busy: int
    wall: float
    peak_rss_mb: float
    replies: str
    turns: int
    load: float
    stopped: bool = False


def usable_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def start_busy(n: int) -> list[subprocess.Popen]:
    """N processes spinning in a loop, process i pinned to usable core i (mod cores)."""
    cores = usable_cores()
    code = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code, str(cores[i % len(cores)])]) for i in range(n)]


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def replies_digest(db: Path, columns: str = "raw, action") -> tuple[str, int]:
    """SHA-256 over every stored turn's game, index and ``columns`` (the raw reply and parsed
    action unless told otherwise), and the number of turns."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(f"SELECT game_id, idx, {columns} FROM turns ORDER BY game_id, idx").fetchall()
    finally:
        con.close()
    h = hashlib.sha256()
    for row in rows:
        h.update(repr(row).encode())
    return h.hexdigest()[:12], len(rows)


def run_once(variant: Variant, study: Path, tmp: Path, busy: int, n: int, timeout: float | None = None) -> Result:
    """One ``agora run`` in its own process; stopped after ``timeout`` seconds (then its wall time is a lower bound)."""
    db = tmp / f"{variant.label}_{busy}_{n}.db"
    env = {**os.environ, "PYTHONPATH": str(variant.src), **variant.env}
    cmd = [sys.executable, "-m", "agorabench", "run", str(study), "--db", str(db), "--quiet"]
    hogs = start_busy(busy)
    try:
        time.sleep(0.5)  # let the busy loops reach their cores
        load = os.getloadavg()[0]
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        if timer:
            timer.cancel()
    finally:
        stop(hogs)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    timed_out = bool(timeout) and wall >= timeout and proc.returncode != 0
    if proc.returncode != 0 and not timed_out:
        raise SystemExit(f"{variant.label}: agora run failed ({proc.returncode}): {err.strip()[-500:]}")
    digest, turns = replies_digest(db) if not timed_out else ("(stopped)", 0)
    return Result(variant.label, busy, wall, usage.ru_maxrss / 1024, digest, turns, load, timed_out)


def extract_src(rev: str, tmp: Path) -> Path:
    """The ``src`` folder of git revision ``rev`` of this repository, unpacked under ``tmp``."""
    out = tmp / f"src_{rev.replace('/', '_').replace('~', '_')}"
    out.mkdir()
    archive = tmp / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), rev, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    return out / "src"


def parse_env(text: str) -> Variant:
    label, _, pairs = text.partition(":")
    env = dict(p.split("=", 1) for p in pairs.split(",") if p)
    return Variant(label, ROOT / "src", env)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", help="git revision whose sources run as the 'before' variant")
    p.add_argument("--env", action="append", default=[], help="LABEL:KEY=VALUE,... a variant of this checkout with extra environment")
    p.add_argument("--no-after", action="store_true", help="leave out the plain variant of this checkout")
    p.add_argument("--busy", type=int, nargs="+", default=[0, 2], help="busy-loop processes during a run (default 0 2)")
    p.add_argument("--timeout", type=float, help="stop a run after this many seconds and report its time as a lower bound")
    p.add_argument("--repeat", type=int, default=1, help="runs of each variant at each load")
    p.add_argument("--full", action="store_true", help="the demo study (studies/demo.toml) instead of the reduced one")
    p.add_argument("--matrices", type=int, choices=[1, 2, 3], default=3, help="reduced study: payoff matrices M1.. played (4 games each; default 3)")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        variants: list[Variant] = []
        if args.before:
            variants.append(Variant("before", extract_src(args.before, tmp)))
        if not args.no_after:
            variants.append(Variant("after", ROOT / "src"))
        variants += [parse_env(e) for e in args.env]
        if args.full:
            study = ROOT / "studies" / "demo.toml"
        else:
            study = tmp / "demo_reduced.toml"
            study.write_text(REDUCED.replace("{matrices}", repr([f"M{i + 1}" for i in range(args.matrices)]).replace("'", '"')))
        results: list[Result] = []
        for n in range(args.repeat):
            for busy in args.busy:
                for v in variants:
                    r = run_once(v, study, tmp, busy, n, args.timeout)
                    results.append(r)
                    print(f"# {v.label} busy={busy}: {'> ' if r.stopped else ''}{r.wall:.1f} s, peak RSS {r.peak_rss_mb:.0f} MB, load {r.load:.1f}, {r.turns} turns, replies {r.replies}", flush=True)

    print(f"\n{len(usable_cores())} usable cores; study: {'studies/demo.toml' if args.full else f'reduced demo ({4 * args.matrices} games)'}; {args.repeat} run(s) each\n")
    print("| variant | busy loops | wall time (s) | × its idle time | peak RSS (MB) | load avg (1 min) at start |")
    print("|---|---|---|---|---|---|")
    for v in variants:
        idle = [r.wall for r in results if r.variant == v.label and r.busy == 0]
        for busy in args.busy:
            rs = [r for r in results if r.variant == v.label and r.busy == busy]
            wall = sum(r.wall for r in rs) / len(rs)
            more = "> " if any(r.stopped for r in rs) else ""
            ratio = f"{more}{wall / (sum(idle) / len(idle)):.2f}" if idle else "-"
            print(f"| {v.label} | {busy} | {more}{wall:.1f} | {ratio} | {max(r.peak_rss_mb for r in rs):.0f} | {sum(r.load for r in rs) / len(rs):.1f} |")
    digests = {r.replies for r in results if not r.stopped}
    verdict = "not compared (no run finished)" if not digests else "yes" if len(digests) == 1 else "NO: " + ", ".join(sorted(digests))
    print(f"\nstored replies identical in every finished run: {verdict}")


if __name__ == "__main__":
    main()
