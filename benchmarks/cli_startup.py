"""How long an ``agora`` process takes before it has done anything: ``agora --help``,
``agora games`` and a two-game scripted ``agora run``, this checkout's sources beside an older
revision's, in one run.

Each command runs as a fresh process (``python -c "from agorabench.cli import main; ..."``, what
the ``agora`` script does) with ``PYTHONPATH`` set to one variant's copy of ``src`` (this
checkout's, copied; the older revision's, from ``git archive``), the variants alternating, and
reports the median wall time, the fastest one and the median CPU time (user + system,
``os.wait4``) over the repeats. On a shared machine the median also measures the others' work;
the fastest process is the nearest to an idle machine's figure.

Two settings of Python's bytecode cache:

- ``none``: no ``__pycache__`` and ``PYTHONDONTWRITEBYTECODE=1``, so every process compiles the
  agorabench modules it imports (as in an environment that sets that variable, this one's);
- ``cached``: the copies compiled first (``compileall``), as after a normal install.

The outputs are compared (``--help`` and ``games`` byte for byte; ``run``'s summary line with its
database path left out): lines that differ are printed (a command or game added since the
revision), and an output that changes between two processes of one variant stops the benchmark.

    .venv/bin/python benchmarks/cli_startup.py --before ee0f385 --repeat 9
"""

from __future__ import annotations

import argparse
import compileall
import difflib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from embedded_load import extract_src  # beside this script: an older revision's sources

ROOT = Path(__file__).resolve().parent.parent

#: Two games of scripted players: one configuration, two peer moves, one strategy in both seats.
STUDY = """name = "startup"
game = "envy.points"
matchups = "ordered_pairs"
seed = 0

[grid]
matrix = ["M1"]
peer_status = ["leading"]
margin = ["significant"]
peer_move = ["B", "D"]

[[models]]
name = "self-max"
spec = "strategy/self-max"
"""

LAUNCH = "import sys; from agorabench.cli import main; sys.exit(main())"


def run_one(src: Path, args: list[str], cwd: Path) -> tuple[float, float, str]:
    """One ``agora ARGS`` process on the sources ``src``: wall seconds, CPU seconds (its own,
    from ``os.wait4``) and what it printed."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    out_file = cwd / "stdout.txt"
    with open(out_file, "wb") as out, open(cwd / "stderr.txt", "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", LAUNCH, *args], cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"agora {' '.join(args)} failed on {src} (status {proc.returncode}): {(cwd / 'stderr.txt').read_text()[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime, out_file.read_text()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", default="ee0f385", help="git revision whose sources run as the 'before' variant (default ee0f385)")
    p.add_argument("--repeat", type=int, default=9, help="processes per command, variant and bytecode setting (default 9)")
    p.add_argument("--bytecode", choices=["none", "cached", "both"], default="both", help="bytecode cache settings measured (default both)")
    args = p.parse_args()

    commands = {"--help": ["--help"], "games": ["games"], "run (2 scripted games)": ["run", "study.toml", "--quiet", "--db"]}
    settings = ["none", "cached"] if args.bytecode == "both" else [args.bytecode]
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; Python {sys.version.split()[0]}")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        variants = {args.before: extract_src(args.before, tmp), "now": tmp / "src_now" / "src"}
        shutil.copytree(ROOT / "src", variants["now"], ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
        work = tmp / "work"
        work.mkdir()
        (work / "study.toml").write_text(STUDY)
        for setting in settings:
            if setting == "cached":
                for src in variants.values():
                    compileall.compile_dir(str(src), quiet=1)
            for name, cmd in commands.items():
                figures: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
                outputs: dict[str, set[str]] = {v: set() for v in variants}
                for i in range(args.repeat + 1):  # the first round warms the file cache and is not counted
                    for label, src in variants.items():
                        argv = [*cmd, str(work / f"{label}_{setting}_{i}.db")] if cmd[-1] == "--db" else cmd
                        wall, cpu, out = run_one(src, argv, work)
                        if i:
                            figures[label].append((wall, cpu))
                        outputs[label].add(out.replace(str(work), "WORK").replace(f"{label}_{setting}_{i}.db", "DB"))
                for label, seen in outputs.items():
                    if len(seen) != 1:
                        raise SystemExit(f"agora {name} on {label}: its output changes from one process to the next")
                before, now = (next(iter(o)) for o in outputs.values())
                if before != now:  # a command or game added since the revision; shown, not an error
                    changed = [line for line in difflib.unified_diff(before.splitlines(), now.splitlines(), lineterm="", n=0) if line[:1] in "+-" and line[:3] not in ("+++", "---")]
                    print(f"agora {name}: outputs differ in {len(changed)} line(s):\n  " + "\n  ".join(changed[:12]))
                cells = [f"{statistics.median(w for w, _ in figures[v]):.3f} s (fastest {min(w for w, _ in figures[v]):.3f} s; CPU {statistics.median(c for _, c in figures[v]):.3f} s)" for v in variants]
                rows.append((name, setting, *cells))
                print(f"{name:24} bytecode {setting:6}  {args.before}: {cells[0]:44}  now: {cells[1]}", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print()
    print(f"| command | bytecode | {args.before} | now |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
