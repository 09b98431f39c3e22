"""Benchmarks of the foundation, printed as a Markdown table (copy it into benchmarks/README.md).

1. Scripted games per second through the full stack (study expansion, runner, table, parsing,
   SQLite store), at concurrency 1 and 32.
2. Share of wall time the embedded model is busy during a study (goal >= 0.95): the runner must
   keep a serialized backend fed.
3. Calls per second through the OpenAI-compatible path against a loopback server answering after
   100 ms, as a share of the ideal C / latency, at C = 64 and 256.

Run: ``.venv/bin/python benchmarks/run_all.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agorabench.core.runner import Runner  # noqa: E402
from agorabench.core.study import load_study  # noqa: E402
from agorabench.store.store import SQLCache, Store  # noqa: E402

SCRIPTED = """
name = "bench_scripted"
game = "envy.points"
matchups = "ordered_pairs"
[grid]
matrix = ["M1", "M2", "M3"]
peer_status = ["leading", "lagging"]
margin = ["marginal", "significant"]
peer_move = ["A", "B", "C", "D"]
{models}
"""

STRATEGIES = ["always-b", "self-max", "spiteful", "random", "fehr-schmidt"]


def scripted_models() -> str:
    return "\n".join(f'[[models]]\nname = "{s}"\nspec = "strategy/{s}"\n' for s in STRATEGIES)


def run(study_text: str, db: Path, concurrency: int) -> tuple[Runner, float]:
    path = db.with_suffix(".toml")
    path.write_text(study_text)
    study = load_study(path)
    store = Store(db)
    runner = Runner(study, store, concurrency=concurrency, cache=SQLCache(store), progress=False)
    started = time.perf_counter()
    asyncio.run(runner.run())
    wall = time.perf_counter() - started
    store.dispose()
    return runner, wall


def bench_scripted(tmp: Path) -> list[tuple[str, str]]:
    rows = []
    for c in (1, 32):
        runner, wall = run(SCRIPTED.format(models=scripted_models()), tmp / f"scripted_{c}.db", c)
        n = runner.stats.done
        rows.append((f"scripted games/s, concurrency {c} ({n} games x 3 turns, SQLite)", f"{n / wall:.0f}"))
    return rows


def bench_busy_share(tmp: Path, quick: bool) -> list[tuple[str, str]]:
    moves = '["B"]' if quick else '["A", "B", "C", "D"]'
    text = f"""
name = "bench_busy"
game = "envy.points"
matchups = "ordered_pairs"
[grid]
matrix = ["M1", "M2"]
peer_status = ["leading", "lagging"]
margin = ["significant"]
peer_move = {moves}
[[models]]
name = "smol"
spec = "local"
max_tokens = 64
constrained = true
[[models]]
name = "b"
spec = "strategy/always-b"
"""
    rows = []
    from agorabench.models.embedded import shared_embedded_backend

    backend = shared_embedded_backend()
    backend._model()  # load outside the measured runs
    for c in (1, 8):
        busy, calls = backend.busy_seconds, backend.calls
        _, wall = run(text, tmp / f"busy_{c}.db", c)
        rows.append((f"embedded model busy share, concurrency {c} ({backend.calls - calls} calls)", f"{(backend.busy_seconds - busy) / wall:.3f}"))
    return rows


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_openai(tmp: Path, quick: bool) -> list[tuple[str, str]]:
    """Calls/s of Model.complete through the default (lean) transport against
    tests/support/fake_openai.py (100 ms); benchmarks/client.py compares it with the SDK and a study."""
    from agorabench.models.model import Model
    from agorabench.models.openai_compat import LeanOpenAIBackend

    port = free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "fake_openai.py"), str(port), "--latency", "0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
                break
            except Exception:
                time.sleep(0.2)
        rows = []
        for c in (64, 256):
            n = c * (4 if quick else 10)

            async def go() -> float:
                model = Model(LeanOpenAIBackend("fake", base_url=f"http://127.0.0.1:{port}/v1"), max_concurrency=c)
                messages = [{"role": "user", "content": "Answer: ?"}]
                await model.complete(messages, sample="warm")
                started = time.perf_counter()
                await asyncio.gather(*(model.complete(messages, sample=i) for i in range(n)))
                wall = time.perf_counter() - started
                await model.aclose()
                return n / wall

            rate = asyncio.run(go())
            rows.append((f"OpenAI path calls/s at C={c}, 100 ms server (share of ideal {c / 0.1:.0f}/s)", f"{rate:.0f} ({rate / (c / 0.1):.0%})"))
        return rows
    finally:
        server.terminate()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--skip-llm", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("AGORA_THREADS", "2")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rows = bench_scripted(tmp)
        if not args.skip_llm:
            rows += bench_busy_share(tmp, args.quick)
        rows += bench_openai(tmp, args.quick)
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; one run.\n")
    print("| measure | result |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
