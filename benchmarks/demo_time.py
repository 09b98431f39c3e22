"""Where the demo's time goes: ``agora run studies/demo.toml`` then ``agora report``, each in a
fresh process, measured by CPU seconds (user + sys) as well as wall time, since the machine is
shared and wall time says more about the other work than about ours.

For each run: the process's CPU, wall time and peak RSS (``os.wait4``); inside it, the model's
load (CPU and wall), its calls (CPU of the llama thread, wall, prompt tokens sent and
evaluated, saved states restored, tokens generated). Then the report's process alike.
Variants: this checkout ("after") and, with ``--before REV``, the sources of an older
revision (extracted with ``git archive``); runs alternate between them. Every turn's raw
answer, action and validity are hashed: the variants must store the same answers.

    .venv/bin/python benchmarks/demo_time.py --before HEAD --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from embedded_load import extract_src, replies_digest  # beside this script: the older sources, one digest of the stored answers

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "studies" / "demo.toml"


@dataclass
class Usage:
    """One finished child process: CPU seconds, wall seconds, peak RSS in MB."""

    cpu: float
    wall: float
    rss_mb: float


def child_run(db: str, out: str) -> None:
    """In the child: load the embedded model on its thread (timed), then ``agora run`` in this
    process, counting what the model did; the figures go to ``out`` as JSON."""
    from agorabench.cli import main
    from agorabench.models.embedded import shared_embedded_backend

    backend = shared_embedded_backend()
    stats = {"calls": 0, "call_cpu": 0.0, "prompt_tokens": 0, "prompt_tokens_evaluated": 0, "states_restored": 0, "completion_tokens": 0}

    def load() -> tuple[float, float]:
        cpu, wall = time.thread_time(), time.perf_counter()
        llama = backend._model()
        pending = [False]
        plain_eval, plain_load = llama.eval, llama.load_state

        def eval_(tokens):  # the first eval of a call is its prompt (what the context lacked)
            if pending[0]:
                pending[0] = False
                stats["prompt_tokens_evaluated"] += len(tokens)
            return plain_eval(tokens)

        def load_state(state):
            stats["states_restored"] += 1
            return plain_load(state)

        llama.eval, llama.load_state = eval_, load_state
        plain_run = backend._run

        def run(messages, settings):
            pending[0] = True
            started = time.thread_time()
            try:
                completion = plain_run(messages, settings)
            finally:
                stats["call_cpu"] += time.thread_time() - started
                stats["calls"] += 1
            stats["prompt_tokens"] += completion.prompt_tokens
            stats["completion_tokens"] += completion.completion_tokens
            return completion

        backend._run = run
        return time.thread_time() - cpu, time.perf_counter() - wall

    load_cpu, load_wall = backend._executor.submit(load).result()
    rc = main(["run", str(DEMO), "--db", db, "--quiet"])
    stats.update(rc=rc, load_cpu=load_cpu, load_wall=load_wall, busy_seconds=backend.busy_seconds)
    Path(out).write_text(json.dumps(stats))


def timed(cmd: list[str], env: dict[str, str]) -> Usage:
    """Run ``cmd``; its CPU (user + sys), wall time and peak RSS. A failure stops the benchmark."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {err.strip()[-800:]}")
    return Usage(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024)


def answers_digest(db: Path) -> tuple[str, int]:
    """SHA-256 over every stored turn's game, index, raw answer, action and validity."""
    return replies_digest(db, "raw, action, valid")


def one_demo(label: str, src: Path, tmp: Path, n: int) -> dict:
    """The demo once with the sources ``src``: the run, then the report."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    db, stats_file, report = tmp / f"{label}{n}.db", tmp / f"{label}{n}.json", tmp / f"{label}{n}_report"
    load = os.getloadavg()[0]
    run = timed([sys.executable, str(Path(__file__).resolve()), "--child", str(db), str(stats_file)], env)
    rep = timed([sys.executable, "-m", "agorabench", "report", str(DEMO), "--db", str(db), "--out", str(report)], env)
    digest, turns = answers_digest(db)
    return {"label": label, "load": load, "run": run, "report": rep, "model": json.loads(stats_file.read_text()), "digest": digest, "turns": turns}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", help="git revision whose sources run as the 'before' variant")
    p.add_argument("--repeat", type=int, default=1, help="runs of each variant (default 1)")
    p.add_argument("--child", nargs=2, metavar=("DB", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child_run(*args.child)
        return
    results = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        variants = ([("before", extract_src(args.before, tmp))] if args.before else []) + [("after", ROOT / "src")]
        for n in range(args.repeat):
            for label, src in variants:
                r = one_demo(label, src, tmp, n)
                results.append(r)
                print(f"# {label}: run {r['run'].cpu:.1f} CPU s / {r['run'].wall:.1f} s wall, report {r['report'].cpu:.1f} CPU s, load {r['load']:.1f}, answers {r['digest']}", flush=True)
    print("\n| variant | load avg at start | whole demo: CPU s / wall s | run: CPU s / wall s / peak RSS MB | model load: CPU s / wall s "
          "| calls: n / CPU s / wall s | prompt tokens: sent / evaluated | states restored | tokens generated | report: CPU s / wall s / peak RSS MB |")
    print("|" + "---|" * 10)
    for r in results:
        run, rep, m = r["run"], r["report"], r["model"]
        print(
            f"| {r['label']} | {r['load']:.1f} | {run.cpu + rep.cpu:.1f} / {run.wall + rep.wall:.1f} | {run.cpu:.1f} / {run.wall:.1f} / {run.rss_mb:.0f} "
            f"| {m['load_cpu']:.2f} / {m['load_wall']:.2f} | {m['calls']} / {m['call_cpu']:.1f} / {m['busy_seconds']:.1f} "
            f"| {m['prompt_tokens']} / {m['prompt_tokens_evaluated']} | {m['states_restored']} | {m['completion_tokens']} "
            f"| {rep.cpu:.1f} / {rep.wall:.1f} / {rep.rss_mb:.0f} |"
        )
    digests = {r["digest"] for r in results}
    print(f"\n{results[0]['turns']} turns per run; answers identical in every run: {'yes' if len(digests) == 1 else 'NO: ' + ', '.join(sorted(digests))}")


if __name__ == "__main__":
    main()
