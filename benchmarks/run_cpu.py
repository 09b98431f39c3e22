"""The whole ``agora run`` process's CPU per model call, measured from outside (issue 44, item 10).

One loopback server (``tests/support/fake_openai.py --fast``, answering after 100 ms, in its own
process, counting requests) and ``agora run STUDY --db NEW.db --concurrency C --quiet`` in a fresh
process, played by each source tree named, alternately. The CPU is the child's user + system time
as the kernel reports it when it ends (``os.wait4``): start-up, study loading, the store, the
probe, the group commit's worker thread and the last write included. Calls are counted by the
server. The study is ``benchmarks/client.py``'s envy study (48 configurations, the model in one
seat, three calls a game), with a fresh database each time, so every decision is a call.

Run: ``.venv/bin/python benchmarks/run_cpu.py --tree before=/tmp/old/src --tree after=src
[--c 256] [--games 768] [--runs 5]``. Each tree is a source tree (a copy of ``src/``); both are
compiled first (``compileall``), so neither pays for compiling its modules. Prints the median and
the fastest of the runs per tree, with the load average before and after.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from client import STUDY, free_port, load_line, server_count, start_server  # noqa: E402


def play(tree: str, study: Path, db: Path, c: int, port: int) -> dict:
    """One ``agora run`` of the study by the source tree; its CPU, wall time and calls."""
    env = {**os.environ, "PYTHONPATH": tree}
    before = server_count(port)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "agorabench", "run", str(study), "--db", str(db), "--concurrency", str(c), "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"agora run with {tree} failed ({proc.returncode}):\n{err[-2000:]}")
    return {"calls": server_count(port) - before, "cpu": usage.ru_utime + usage.ru_stime, "wall": wall}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tree", action="append", required=True, metavar="NAME=SRC", help="a source tree to measure (repeatable)")
    p.add_argument("--c", type=int, default=256, help="games in flight (--concurrency)")
    p.add_argument("--games", type=int, default=768, help="games per run (a multiple of 48)")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    for name, tree in trees.items():
        if not (Path(tree) / "agorabench" / "__init__.py").is_file():
            sys.exit(f"--tree {name}: {tree} is not a source tree (a copy of src/)")
        compileall.compile_dir(tree, quiet=1)
    port = free_port()
    server = start_server(port)
    got: dict[str, list[dict]] = {name: [] for name in trees}
    try:
        with tempfile.TemporaryDirectory() as d:
            study = Path(d) / "bench_run_cpu.toml"
            study.write_text(STUDY.format(url=f"http://127.0.0.1:{port}/v1", c=args.c, repeats=max(1, args.games // 48), transport="lean"))
            play(next(iter(trees.values())), study, Path(d) / "warm.db", args.c, port)  # warm the server and the page cache
            print(f"before: {load_line()}", file=sys.stderr)
            for i in range(args.runs):
                for name, tree in trees.items():
                    r = play(tree, study, Path(d) / f"{name}_{i}.db", args.c, port)
                    got[name].append(r)
                    print(f"{name}: {r['calls']} calls, {r['cpu']:.3f} s CPU, {1000 * r['cpu'] / r['calls']:.3f} ms per call, wall {r['wall']:.2f} s", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"\n{load_line()}; C = {args.c}; {args.games} games; {args.runs} alternating runs each; fresh process and database per run\n")
    print("| code | calls per run | process CPU per call: median | fastest | wall: median |")
    print("|---|---|---|---|---|")
    for name, rs in got.items():
        per = [1000 * r["cpu"] / r["calls"] for r in rs]
        print(f"| {name} | {rs[0]['calls']} | {statistics.median(per):.3f} ms | {min(per):.3f} ms | {statistics.median(r['wall'] for r in rs):.2f} s |")
    print(json.dumps({name: [1000 * r["cpu"] / r["calls"] for r in rs] for name, rs in got.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
