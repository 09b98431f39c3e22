"""Report at scale: ``agora report`` over a study of about 100,000 scripted envy point-allocation
games (the foundation benchmark's 960-game study with 105 repeats: 100,800 games, 3 turns each).

The database is built once with the runner (several minutes) and reused. The report runs in a
fresh process; its wall time, CPU time and peak resident memory (ru_maxrss of the child) are
printed as Markdown table rows for benchmarks/README.md. On a machine shared with other work the
wall time exceeds the CPU time; on an idle one they are close (the report is single-threaded).

Run: ``.venv/bin/python benchmarks/report_scale.py [--db /tmp/report_scale.db] [--repeats 105]``.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from run_all import SCRIPTED, scripted_models  # noqa: E402

from agorabench.core.runner import Runner  # noqa: E402
from agorabench.core.study import load_study  # noqa: E402
from agorabench.store.store import SQLCache, Store  # noqa: E402


def build(db: Path, repeats: int) -> Path:
    text = SCRIPTED.format(models=scripted_models()).replace('matchups = "ordered_pairs"', f'matchups = "ordered_pairs"\nrepeats = {repeats}')
    path = db.with_suffix(".toml")
    path.write_text(text.replace('name = "bench_scripted"', 'name = "bench_report_scale"'))
    store = Store(db)
    runner = Runner(load_study(path), store, concurrency=32, cache=SQLCache(store), progress=False)
    asyncio.run(runner.run())
    store.dispose()
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=str(Path(tempfile.gettempdir()) / "agora_report_scale.db"))
    ap.add_argument("--repeats", type=int, default=105)
    args = ap.parse_args()
    db = Path(args.db)
    started = time.perf_counter()
    study = build(db, args.repeats)
    print(f"database ready in {time.perf_counter() - started:.0f} s: {db}", file=sys.stderr)
    out = Path(tempfile.mkdtemp()) / "report"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "agorabench", "report", str(study), "--db", str(db), "--out", str(out)], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = usage.ru_maxrss / 1024 / 1024  # KiB -> GiB
    cpu = usage.ru_utime + usage.ru_stime
    n = len(Store(db).games("bench_report_scale"))
    print("| measure | result |\n|---|---|")
    print(f"| `agora report` over {n:,} scripted envy games (3 turns each): wall time | {wall:.1f} s |")
    print(f"| same: CPU time of the report process (user + sys) | {cpu:.1f} s |")
    print(f"| same: peak memory of the report process | {peak:.2f} GiB |")


if __name__ == "__main__":
    main()
