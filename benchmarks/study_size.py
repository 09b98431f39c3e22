"""Study size (issue 22, item 2): how long until the first game of a 100,000-game study starts,
and what refusing an oversized design costs.

``first``: writes a scripted envy study of about ``--games`` games (4 strategies in 12 ordered pairs
x 3 matrices x repeats), runs ``agora run`` on it in this process against a fresh SQLite file and
stops at the first game: prints the seconds from the command's start to that game and the
process's peak memory. ``refuse``: a study of ``--models`` models in ordered pairs (10,000 make
about 10^8 games); prints whether and how it was refused, the seconds and the peak memory.
``stop``: runs that study in a subprocess, sends SIGINT (then, in a second run, SIGTERM) once
1,000 games are stored and prints the seconds to the exit and the games kept.
Each in a fresh process: ``.venv/bin/python benchmarks/study_size.py first|refuse|stop``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agorabench.cli import main  # noqa: E402
from agorabench.core.runner import Runner  # noqa: E402

HEAD = """
name = "size"
game = "envy.points"
matchups = "ordered_pairs"
repeats = {repeats}

[grid]
matrix = ["M1", "M2", "M3"]

[fixed]
peer_status = "leading"
margin = "marginal"
peer_move = "B"
"""


class FirstGame(Exception):
    """Raised at the first game: the measurement is done."""


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def first(games: int, folder: Path) -> None:
    repeats = max(1, round(games / 36))
    study = folder / "size.toml"
    study.write_text(HEAD.format(repeats=repeats) + "".join(f'[[models]]\nname = "{n}"\nspec = "strategy/{n}"\n' for n in ("always-b", "self-max", "spiteful", "random")))
    started = time.perf_counter()
    seen: list[float] = []

    async def play_one(self, spec, *args, **kwargs):
        seen.append(time.perf_counter() - started)
        raise FirstGame

    Runner.play_one = play_one  # type: ignore[method-assign]
    try:
        main(["run", str(study), "--db", str(folder / "size.db"), "--quiet"])
    except FirstGame:
        pass
    print(f"first: {repeats * 36:,} games: first game after {seen[0]:.2f} s; peak memory {peak_mb():.0f} MB")


def stop(games: int, folder: Path) -> None:
    """Seconds from a signal to the exit of ``agora run`` (a subprocess) on a scripted study,
    sent once it has stored games; SIGINT then SIGTERM."""
    import os
    import signal
    import sqlite3
    import subprocess

    study = folder / "stop.toml"
    study.write_text(HEAD.format(repeats=max(1, round(games / 36))) + "".join(f'[[models]]\nname = "{n}"\nspec = "strategy/{n}"\n' for n in ("always-b", "self-max", "spiteful", "random")))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for sig in (signal.SIGINT, signal.SIGTERM):
        db = folder / f"stop_{sig.name}.db"
        proc = subprocess.Popen([sys.executable, "-m", "agorabench", "run", str(study), "--db", str(db), "--quiet"], env=env, stderr=subprocess.PIPE, text=True)
        stored = 0
        while stored < 1000 and proc.poll() is None:
            time.sleep(0.2)
            try:
                with sqlite3.connect(db, timeout=30) as conn:
                    stored = conn.execute("select count(*) from games").fetchone()[0]
            except sqlite3.OperationalError:
                pass
        sent = time.perf_counter()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        took = time.perf_counter() - sent
        with sqlite3.connect(db) as conn:
            after = conn.execute("select count(*) from games").fetchone()[0]
        print(f"stop: {sig.name}: exit {proc.returncode} after {took:.2f} s; {after:,} games stored; {err.strip().splitlines()[-1]}")


def refuse(models: int, folder: Path) -> None:
    study = folder / "huge.toml"
    study.write_text(HEAD.format(repeats=1) + "".join(f'[[models]]\nname = "m{i}"\nspec = "strategy/self-max"\n' for i in range(models)))
    started = time.perf_counter()
    rc = main(["run", str(study), "--db", str(folder / "huge.db"), "--quiet"])
    print(f"refuse: {models:,} models: exit {rc} after {time.perf_counter() - started:.2f} s; peak memory {peak_mb():.0f} MB")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["first", "refuse", "stop"])
    p.add_argument("--games", type=int, default=100_000)
    p.add_argument("--models", type=int, default=10_000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if a.what == "refuse":
            refuse(a.models, Path(tmp))
        else:
            (first if a.what == "first" else stop)(a.games, Path(tmp))
