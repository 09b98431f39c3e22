"""Ray fan-out against a latency-bound backend: calls/s with 4 workers vs 1 at a fixed
per-worker concurrency.

A study whose LLM seat is served by ``tests/support/fake_openai.py`` (answers after ``--latency``
seconds) is played with ``run_ray`` into a fresh SQLite store, once with 1 worker and once with
4, each worker running the async runner with ``--concurrency`` games in flight. Ray is started
once (and warmed up) before both timings, so the figures count playing, not cluster start-up.
Calls are counted by the server.

Ray binds outside addresses; run this inside a private network namespace:

    unshare -n -p -f --mount-proc sh -c 'ip link set lo up && exec env RAY_USAGE_STATS_ENABLED=0 \\
        .venv/bin/python benchmarks/ray_scaling.py [--latency 0.5] [--concurrency 4] [--repeats 3]'
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agorabench.core.executors import run_ray  # noqa: E402
from scripted_scale import ENVY_GRID  # noqa: E402

STUDY = 'name = "ray_bench_{tag}"\nrepeats = {repeats}\n' + ENVY_GRID.replace("{", "{{").replace("}", "}}") + """
[[models]]
name = "remote"
spec = "openai/fake"
base_url = "http://127.0.0.1:{port}/v1"
max_concurrency = 256
[[models]]
name = "b"
spec = "strategy/always-b"
"""


def requests_served(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as r:
        return json.loads(r.read())["requests"]


def main() -> None:
    import ray

    p = argparse.ArgumentParser()
    p.add_argument("--latency", type=float, default=0.5)
    p.add_argument("--concurrency", type=int, default=4, help="games in flight per worker")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--port", type=int, default=18_431)
    args = p.parse_args()
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "fake_openai.py"), str(args.port), "--latency", str(args.latency)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                requests_served(args.port)
                break
            except Exception:
                time.sleep(0.1)
        with tempfile.TemporaryDirectory(prefix="agora-ray-bench-") as d:
            tmp = Path(d)
            ray.init(num_cpus=4, include_dashboard=False, _temp_dir=str(tmp / "ray"), log_to_driver=False)
            rows = []
            for tag, workers, repeats in (("warm", 4, 1), ("w1", 1, args.repeats), ("w4", 4, args.repeats)):
                study = tmp / f"{tag}.toml"
                study.write_text(STUDY.format(tag=tag, repeats=repeats, port=args.port))
                calls = requests_served(args.port)
                started = time.perf_counter()
                t0 = time.time()
                counts, info = run_ray(str(study), str(tmp / f"{tag}.db"), workers=workers, concurrency=args.concurrency)
                wall = time.perf_counter() - started
                print(tag, f"wall {wall:.1f} s; shares (games, task start after the call s, task s):", [(sh["played"], round(sh["started"] - t0, 1), round(sh["seconds"], 1)) for sh in info["shares"]], flush=True)
                calls = requests_served(args.port) - calls
                if tag != "warm":
                    rows.append((workers, counts["played"], calls, wall, calls / wall))
            ray.shutdown()
    finally:
        server.terminate()
    print(f"latency {args.latency} s, {args.concurrency} games in flight per worker (ideal {args.concurrency / args.latency:.1f} calls/s per worker at 1 call per game in flight)\n")
    print("| workers | games | calls | wall s | calls/s |\n|---|---|---|---|---|")
    for w, g, c, wall, rate in rows:
        print(f"| {w} | {g} | {c} | {wall:.1f} | {rate:.1f} |")
    print(f"\nratio 4 workers / 1 worker: {rows[1][4] / rows[0][4]:.2f}x")


if __name__ == "__main__":
    main()
