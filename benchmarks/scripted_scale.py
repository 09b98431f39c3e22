"""Scripted engine throughput at scale, and where its time goes.

Plays the envy point-allocation design (48 configurations x 20 ordered pairs of five strategies,
3 decisions per game) repeated until about ``--games`` games, in one process on one core, into a
fresh SQLite store, and prints games/s and decisions/s per wall second and per CPU second of the process (on a
shared machine the CPU figure is the per-core throughput), and the database size. ``--profile`` runs
it under cProfile and prints the time per part of the engine (study expansion, table, rules and
prompt rendering, strategies and answer parsing, the store).

Run: ``.venv/bin/python benchmarks/scripted_scale.py --games 100000 [--profile] [--study FILE --model SPEC ...]``
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import math
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agorabench.core.runner import Runner  # noqa: E402
from agorabench.core.study import load_study  # noqa: E402
from agorabench.store.store import SQLCache, Store  # noqa: E402

STRATEGIES = ["always-b", "self-max", "spiteful", "random", "fehr-schmidt"]
#: The envy point-allocation design (48 configurations), for study files of the benchmarks.
ENVY_GRID = """
game = "envy.points"
matchups = "ordered_pairs"
[grid]
matrix = ["M1", "M2", "M3"]
peer_status = ["leading", "lagging"]
margin = ["marginal", "significant"]
peer_move = ["A", "B", "C", "D"]
"""
ENVY = 'name = "bench_scale"\nrepeats = {repeats}\n' + ENVY_GRID + "\n".join(f'[[models]]\nname = "{s}"\nspec = "strategy/{s}"\n' for s in STRATEGIES)

#: Where a function's own time is charged: first matching path fragment wins.
PARTS = [
    ("store (SQLAlchemy, SQLite, JSON)", ("store/store.py", "sqlalchemy", "sqlite3", "json/", "_json")),
    ("study expansion and game ids", ("core/study.py", "hashlib")),
    ("prompt rendering (Jinja2)", ("jinja2", "core/game.py", "markupsafe")),
    ("actions: render and parse (pydantic)", ("core/actions.py", "pydantic")),
    ("strategies", ("strategies.py", "core/agents.py")),
    ("game rules", ("games/",)),
    ("table (transcripts, turn records)", ("core/table.py",)),
    ("runner and asyncio", ("core/runner.py", "asyncio", "selectors")),
]


def breakdown(profile: cProfile.Profile) -> list[tuple[str, float]]:
    """Own time (tottime) of every profiled function, summed per part of the engine."""
    stats = pstats.Stats(profile)
    totals: dict[str, float] = {}
    for (path, _line, name), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        part = next((label for label, keys in PARTS if any(k in path or k in name for k in keys)), "other (builtins, random, copies)")
        totals[part] = totals.get(part, 0.0) + tottime
    return sorted(totals.items(), key=lambda kv: -kv[1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--games", type=int, default=100_000)
    p.add_argument("--study", help="another study file (its repeats are kept)")
    p.add_argument("--model", action="append", help="model specs replacing the study's (with --study)")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--top", type=int, default=0, help="also print the N functions with most own time")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.study:
            study = load_study(args.study, models=args.model)
        else:
            path = tmp / "scale.toml"
            path.write_text(ENVY.format(repeats=max(1, math.ceil(args.games / 960))))
            study = load_study(path)
        db = tmp / "scale.db"
        store = Store(db)
        runner = Runner(study, store, concurrency=args.concurrency, cache=SQLCache(store), progress=False)
        profile = cProfile.Profile(time.process_time) if args.profile else None  # CPU time: the machine may be shared
        started, cpu_started = time.perf_counter(), time.process_time()
        if profile:
            profile.enable()
        asyncio.run(runner.run())
        if profile:
            profile.disable()
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        store.dispose()
        size = db.stat().st_size
        s = runner.stats
        print(f"{s.done} games, {s.turns} decisions in {wall:.1f} s{' (profiled)' if profile else ''}: "
              f"{s.done / wall:.0f} games/s, {s.turns / wall:.0f} decisions/s; CPU {cpu:.1f} s: "
              f"{s.done / cpu:.0f} games and {s.turns / cpu:.0f} decisions per CPU second; "
              f"database {size / 1e6:.1f} MB ({size / max(1, s.done):.0f} bytes/game); {os.cpu_count()} cores")
        if profile:
            total = sum(t for _, t in breakdown(profile))
            print("\n| part | share of time |\n|---|---|")
            for part, t in breakdown(profile):
                print(f"| {part} | {t / total:.0%} |")
            if args.top:
                pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
