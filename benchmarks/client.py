"""Client throughput against a fast OpenAI-compatible backend: is agorabench the bottleneck?

One loopback server (tests/support/fake_openai.py, answering after 100 ms, in its own process, counting
requests itself) and, in this process, one after another at the same number C of requests in
flight:

1. ``raw``: keep-alive HTTP/1.1 on bare asyncio sockets with the same request body: the most any
   Python client on this machine could get from this server (the server's ceiling here);
2. ``sdk``: the official ``openai`` SDK (aiohttp transport) called directly;
3. ``aiohttp``: the aiohttp transport (one aiohttp session, orjson bodies) called directly;
4. ``lean``: the default transport (our HTTP/1.1 client, orjson bodies) called directly;
5. ``model``: ``Model.complete`` over the lean transport (limits, retries, accounting; no cache);
6. ``study``: a whole envy study (table, prompts, parsing, response cache, SQLite store) with
   C games in flight, every game three model calls, on each of the three transports;
7. ``study_processes``: the same study (lean transport) played by ``run_processes`` (``agora run
   --executor processes``): 2 local processes with C / 2 games in flight each, one database.
   Its client CPU counts the worker processes' too.

Each line gives calls/s (counted by the server) and the share of the ideal C / 100 ms. All
traffic goes to 127.0.0.1; each measurement is bounded (a fixed number of calls, and a time cap).

Run: ``.venv/bin/python benchmarks/client.py [--c 64 256] [--rounds 12] [--loop uvloop asyncio]
[--plain-server] [--profile]``. Every column runs once per event loop named (``agorabench.loop``:
uvloop, as ``agora run`` uses where installed, or asyncio's own). The server runs with ``--fast``
(uvloop, orjson request bodies) unless ``--plain-server``. A study plays whole waves of games:
its number of games is a multiple of C and of the 48 configurations, about rounds x C / 3.
``--profile`` runs the study at the first C under cProfile and prints where the client's CPU
time goes.

``--ab OLD_SRC [--ab-runs N]``: only the whole study (lean transport), played by the source tree
``OLD_SRC`` (a copy of ``src/`` from before a change) and by this checkout's ``src/``, one after
the other N times at each C (each play in a fresh process, against the same server), then the
median of each: calls/s, client CPU per call (the process) and the event loop thread's own CPU per
call (``time.thread_time``: what every response waits behind; the group commit's worker thread is
the difference). On a machine others share, this compares two versions under the same load.

``--split N [N ...] [--ab-runs R]``: only the whole study, played at each C by one process and by
N processes at once (each with C / N in flight and its own database), R times each; medians of
calls/s over the slowest process's wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
import math
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The source tree measured (``--ab`` plays another one in a child process through this variable).
SRC = os.environ.get("AGORABENCH_BENCH_SRC") or str(ROOT / "src")
sys.path.insert(0, SRC)

from agorabench.core.runner import Runner  # noqa: E402
from agorabench.core.study import load_study  # noqa: E402
from agorabench import loop as event_loop  # noqa: E402
from agorabench.models.base import GenerationSettings  # noqa: E402
from agorabench.models.model import Model  # noqa: E402
from agorabench.models.openai_compat import AiohttpOpenAIBackend, LeanOpenAIBackend  # noqa: E402
from agorabench.store.store import SQLCache, Store  # noqa: E402

LATENCY = 0.1
MESSAGES = [
    {"role": "system", "content": "You are taking part in a study of choices. Answer in the format asked."},
    {"role": "user", "content": "Pick one of the options A, B, C or D and explain briefly. Reply in XML: <response><choice>X</choice><reasoning>...</reasoning></response>"},
]

STUDY = """
name = "bench_client"
game = "envy.points"
matchups = "seats"
repeats = {repeats}
seats = [{{ focal = "remote", peer = "b" }}]
[grid]
matrix = ["M1", "M2", "M3"]
peer_status = ["leading", "lagging"]
margin = ["marginal", "significant"]
peer_move = ["A", "B", "C", "D"]
[[models]]
name = "remote"
spec = "openai/fake"
base_url = "{url}"
max_concurrency = {c}
transport = "{transport}"
[[models]]
name = "b"
spec = "strategy/always-b"
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_count(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as r:
        return json.loads(r.read())["requests"]


def start_server(port: int, fast: bool = True) -> subprocess.Popen:
    extra = ["--fast"] if fast else []
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "fake_openai.py"), str(port), "--latency", str(LATENCY), *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(150):
        try:
            server_count(port)
            return proc
        except Exception:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("fake server did not start")


async def _bounded(n: int, c: int, call) -> None:
    """n calls with at most c in flight."""
    sem = asyncio.Semaphore(c)

    async def one(i: int) -> None:
        async with sem:
            await call(i)

    await asyncio.gather(*(one(i) for i in range(n)))


async def raw_sockets(port: int, n: int, c: int) -> None:
    """c keep-alive connections, each sending its share of the n requests one after another."""
    body = json.dumps({"model": "fake", "messages": MESSAGES, "temperature": 0, "max_tokens": 256}).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()

    async def conn(k: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(k):
            writer.write(head + body)
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
        writer.close()

    await asyncio.gather(*(conn(n // c) for _ in range(c)))


async def sdk_direct(url: str, n: int, c: int) -> None:
    import openai
    from openai import DefaultAioHttpClient

    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, http_client=DefaultAioHttpClient())

    async def call(_i: int) -> None:
        await client.chat.completions.create(model="fake", messages=MESSAGES, temperature=0, max_tokens=256, seed=0)

    await _bounded(n, c, call)
    await client.close()


async def lean_direct(url: str, n: int, c: int, cls=LeanOpenAIBackend) -> None:
    backend = cls("fake", base_url=url)
    settings = GenerationSettings()
    await _bounded(n, c, lambda _i: backend.complete(MESSAGES, settings))
    await backend.aclose()


async def model_lean(url: str, n: int, c: int) -> None:
    model = Model(LeanOpenAIBackend("fake", base_url=url), max_concurrency=c)
    await asyncio.gather(*(model.complete(MESSAGES, sample=i) for i in range(n)))
    await model.aclose()


def study_games(c: int, rounds: int) -> int:
    """Games of a study at C in flight: whole waves (a multiple of C) of whole repeats of the 48
    configurations, as near rounds x C / 3 as that allows (at least one wave)."""
    unit = math.lcm(48, c)
    return max(1, round(rounds * c / 3 / unit)) * unit


def whole_study(url: str, c: int, games: int, tmp: Path, transport: str = "lean", profile: Path | None = None, run=asyncio.run) -> float:
    """Play the study; returns the CPU seconds of the thread that ran the event loop."""
    path = tmp / f"client_{c}_{transport}.toml"
    path.write_text(STUDY.format(url=url, c=c, repeats=max(1, games // 48), transport=transport))
    study = load_study(path)
    store = Store(tmp / f"client_{c}_{transport}_{time.time_ns()}.db")
    runner = Runner(study, store, concurrency=c, cache=SQLCache(store), progress=False)
    if profile is not None:
        prof = cProfile.Profile(time.process_time)  # CPU time: the idle wait in the loop is not counted
        prof.enable()
    loop_cpu = time.thread_time()
    run(runner.run())
    loop_cpu = time.thread_time() - loop_cpu
    if profile is not None:
        prof.disable()
        prof.dump_stats(profile)
    store.dispose()
    return loop_cpu


def whole_study_processes(url: str, c: int, games: int, tmp: Path, workers: int = 2) -> float:
    """Play the study (lean transport) in ``workers`` local processes, C / workers games in flight
    each, into one SQLite database (:func:`agorabench.core.executors.run_processes`); returns 0
    (the event loops run in the workers)."""
    from agorabench.core.executors import run_processes

    path = tmp / f"client_{c}_processes.toml"
    path.write_text(STUDY.format(url=url, c=c, repeats=max(1, games // 48), transport="lean"))
    counts, _ = run_processes(str(path), str(tmp / f"client_{c}_processes_{time.time_ns()}.db"), workers=workers, concurrency=max(1, c // workers))
    if counts["failed"] or counts["errors"]:
        sys.exit(f"the study in processes failed: {counts}")
    return 0.0


def study_only(port: int, c: int, games: int) -> None:
    """One whole study (lean transport) in this process, as ``--ab``'s child: prints one JSON line
    (calls counted by the server, wall seconds, process and loop-thread CPU seconds)."""
    import aiohttp  # noqa: F401  (imported by the columns before the study in a full run)

    url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryDirectory() as d:
        before, started, cpu = server_count(port), time.perf_counter(), time.process_time()
        loop_cpu = whole_study(url, c, games, Path(d), run=event_loop.run)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(json.dumps({"calls": server_count(port) - before, "wall": wall, "cpu": cpu, "loop_cpu": loop_cpu}))


def ab(old_src: str, port: int, cs: list[int], rounds: int, runs: int, loop_name: str = "uvloop") -> None:
    """The whole study by ``old_src`` and by this checkout's ``src``, alternately, ``runs`` times
    at each C; prints a table of medians."""
    import statistics

    if not (Path(old_src) / "agorabench" / "__init__.py").is_file():
        sys.exit(f"--ab: {old_src} is not a source tree (a copy of src/, with agorabench/ in it)")
    trees = {"before": str(Path(old_src).resolve()), "after": str(ROOT / "src")}
    print(f"before: {load_line()}", file=sys.stderr)
    lines = []
    for c in cs:
        games = study_games(c, rounds)
        got: dict[str, list[dict]] = {name: [] for name in trees}
        for _ in range(runs):
            for name, tree in trees.items():
                env = {**os.environ, "AGORABENCH_BENCH_SRC": tree, event_loop.ENV: loop_name}
                out = subprocess.run(study_child(port, c, rounds), env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"the study with {tree} failed:\n{out.stderr.strip()[-2000:]}")
                got[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
                r = got[name][-1]
                print(f"C={c} {name}: {r['calls'] / r['wall']:.0f}/s, {1000 * r['cpu'] / r['calls']:.3f} ms, loop {1000 * r['loop_cpu'] / r['calls']:.3f} ms", file=sys.stderr)
        for name in trees:
            rs = got[name]
            rate = statistics.median(r["calls"] / r["wall"] for r in rs)
            cpu = statistics.median(1000 * r["cpu"] / r["calls"] for r in rs)
            loop_cpu = statistics.median(1000 * r["loop_cpu"] / r["calls"] for r in rs)
            lines.append(f"| {c} | {name} | {games} games, {3 * games} calls | {rate:.0f}/s ({rate / (c / LATENCY):.0%}) | {cpu:.3f} ms | {loop_cpu:.3f} ms |")
    print(f"\n{load_line()}; medians of {runs} runs each, alternating; {loop_name}; fast server\n")
    print("| in flight | code | study | calls/s (share of C/L) | client CPU per call | event loop thread CPU per call |")
    print("|---|---|---|---|---|---|")
    print("\n".join(lines))


def study_child(port: int, c: int, rounds: int) -> list[str]:
    """The command of a child process playing one whole study (:func:`study_only`)."""
    return [sys.executable, __file__, "--study-only", str(port), "--c", str(c), "--rounds", str(rounds)]


def split(port: int, cs: list[int], rounds: int, parts: list[int], runs: int, loop_name: str = "uvloop") -> None:
    """The whole study at C in flight played by one process and by N processes at once, each
    with C / N in flight and its own database (about the same calls in all), alternately,
    ``runs`` times; prints the medians of calls/s counted by the server over the slowest
    process's wall time. Whether a second process (a second core for the client) closes the
    gap to raw sockets."""
    import statistics

    env = {**os.environ, event_loop.ENV: loop_name}
    lines = []
    for c in cs:
        rates: dict[int, list[float]] = {n: [] for n in parts}
        for _ in range(runs):
            for n in parts:
                before = server_count(port)
                procs = [subprocess.Popen(study_child(port, c // n, rounds), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(n)]
                outs = [p.communicate() for p in procs]
                if any(p.returncode for p in procs):
                    sys.exit("a study process failed:\n" + "\n".join(err.strip()[-1500:] for _, err in outs))
                walls = [json.loads(out.strip().splitlines()[-1])["wall"] for out, _ in outs]
                rates[n].append((server_count(port) - before) / max(walls))
                print(f"C={c} in {n} process(es): {rates[n][-1]:.0f}/s", file=sys.stderr)
        for n in parts:
            rate = statistics.median(rates[n])
            lines.append(f"| {c} | {n} x {c // n} | {rate:.0f}/s ({rate / (c / LATENCY):.0%}) |")
    print(f"\n{load_line()}; medians of {runs} runs; {loop_name}; fast server\n")
    print("| in flight | processes x games in flight each | calls/s (share of C/L) |")
    print("|---|---|---|")
    print("\n".join(lines))


SERVER_PID = 0


def server_cpu() -> float:
    """The server process's CPU seconds so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{SERVER_PID}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _client_cpu() -> float:
    """CPU seconds of this process and of its ended, waited-for children (the worker processes
    of ``study_processes``; the server is waited for only at the end)."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


def measure(port: int, fn) -> tuple[float, float, float]:
    """(calls/s counted by the server, client CPU milliseconds per call, server CPU
    milliseconds per call)."""
    before, server_before = server_count(port), server_cpu()
    started, cpu = time.perf_counter(), _client_cpu()
    fn()
    wall, cpu = time.perf_counter() - started, _client_cpu() - cpu
    calls = server_count(port) - before
    return calls / wall, 1000 * cpu / max(calls, 1), 1000 * (server_cpu() - server_before) / max(calls, 1)


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} cores"


CATEGORIES = [
    ("HTTP client (our HTTP/1.1 client, transport; aiohttp, openai SDK where used)", ("models/http11.py", "models/openai_compat.py", "models/transport/", "models/errors.py", "aiohttp", "openai", "httpx", "yarl", "multidict", "anyio", "h11")),
    ("JSON (orjson, json: stored columns, cache key, bodies)", ("orjson", "/json/")),
    ("store and response cache (SQLAlchemy, sqlite3, store.py)", ("sqlalchemy", "sqlite3", "store/", "redact.py")),
    ("Model.complete (cache key hashing, retries, limits, sanitising)", ("hashlib", "models/model.py", "models/limits.py", "models/base.py")),
    ("prompt rendering (jinja2, games)", ("jinja2", "games/", "core/game.py")),
    ("table, actions, parsing (pydantic, re)", ("core/table.py", "core/actions.py", "core/formats.py", "pydantic", "/re/", "core/agents.py")),
    ("runner (claims, progress, workers, seat kinds)", ("core/runner.py", "core/study.py", "core/progress.py", "core/seats.py", "models/spec.py", "typing.py")),
    ("event loop, sockets, asyncio", ("asyncio", "selectors", "socket", "ssl", "uvloop")),
]


def breakdown(profile: Path) -> list[tuple[str, float]]:
    """Own CPU time (tottime) per category, by the file each function lives in (``typing.py``
    counts as the runner's: its protocol checks were the seat kinds')."""
    st = pstats.Stats(str(profile))
    totals: dict[str, float] = {}
    for (filename, _line, func), (_cc, _nc, tt, _ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        name = filename.replace("\\", "/")
        if filename == "~":  # built-ins: attribute by name
            name = func
        cat = "builtins and the rest (isinstance, len, dataclasses, ...)"
        for label, keys in CATEGORIES:
            if any(k in name for k in keys):
                cat = label
                break
        if "poll" in func and "select" in name or func == "<method 'poll' of 'select.epoll' objects>":
            cat = "idle (waiting in epoll)"
        totals[cat] = totals.get(cat, 0.0) + tt
    return sorted(totals.items(), key=lambda kv: -kv[1])


COLUMNS = ("raw", "sdk", "aiohttp", "lean", "model", "study", "study_aiohttp", "study_sdk", "study_processes")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--c", type=int, nargs="+", default=[64, 256])
    p.add_argument("--rounds", type=int, default=8, help="calls per measurement = rounds x C")
    p.add_argument("--loop", nargs="+", choices=["uvloop", "asyncio"], default=["uvloop", "asyncio"], help="event loops of the client (each gets its rows)")
    p.add_argument("--plain-server", action="store_true", help="the test server as the tests run it (asyncio loop, json request bodies)")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--columns", nargs="+", choices=COLUMNS, default=list(COLUMNS), help="the columns measured (the others are shown as nan)")
    p.add_argument("--ab", metavar="OLD_SRC", help="compare the whole study of OLD_SRC (a copy of src/) with this checkout's, alternately")
    p.add_argument("--ab-runs", type=int, default=5, help="plays of each version per C with --ab")
    p.add_argument("--split", type=int, nargs="+", metavar="N", help="only the whole study, in 1 and in each N processes sharing C (see split())")
    p.add_argument("--study-only", type=int, metavar="PORT", help=argparse.SUPPRESS)  # --ab's child
    args = p.parse_args()
    if args.study_only:
        os.environ.setdefault(event_loop.ENV, "uvloop")
        study_only(args.study_only, args.c[0], study_games(args.c[0], args.rounds))
        return
    port = free_port()
    server = start_server(port, fast=not args.plain_server)
    global SERVER_PID
    SERVER_PID = server.pid
    url = f"http://127.0.0.1:{port}/v1"
    rows = []
    runs = {}
    for name in args.loop:
        os.environ[event_loop.ENV] = name
        if event_loop.loop_name() != name:
            sys.exit(f"the {name} event loop is not available here")
        runs[name] = event_loop.run
    try:
        if args.split:
            asyncio.run(lean_direct(url, 64, 64))  # warm the server
            split(port, args.c, args.rounds, sorted({1, *args.split}), args.ab_runs, args.loop[0])
            return
        if args.ab:
            asyncio.run(lean_direct(url, 64, 64))  # warm the server
            ab(args.ab, port, args.c, args.rounds, args.ab_runs, args.loop[0])
            return
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            asyncio.run(lean_direct(url, 64, 64))  # warm the server
            print(f"before: {load_line()}", file=sys.stderr)
            for c in args.c:
                n = c * args.rounds
                games = study_games(c, args.rounds)
                ideal = c / LATENCY
                for name in args.loop:
                    os.environ[event_loop.ENV] = name
                    run = runs[name]
                    plays = {
                        "raw": lambda: run(raw_sockets(port, n, c)),
                        "sdk": lambda: run(sdk_direct(url, n, c)),
                        "lean": lambda: run(lean_direct(url, n, c)),
                        "aiohttp": lambda: run(lean_direct(url, n, c, AiohttpOpenAIBackend)),
                        "model": lambda: run(model_lean(url, n, c)),
                        "study": lambda: whole_study(url, c, games, tmp, run=run),
                        "study_aiohttp": lambda: whole_study(url, c, games, tmp, transport="aiohttp", run=run),
                        "study_sdk": lambda: whole_study(url, c, games, tmp, transport="sdk", run=run),
                        "study_processes": lambda: whole_study_processes(url, c, games, tmp),
                    }
                    cells = {k: measure(port, play) if k in args.columns else (float("nan"),) * 3 for k, play in plays.items()}
                    rows.append((c, name, ideal, cells))
                    print(f"C={c} {name} ({games} games, {3 * games} study calls): " + ", ".join(f"{k} {v:.0f}/s {ms:.2f} ms (server {sms:.2f} ms)" for k, (v, ms, sms) in cells.items()), file=sys.stderr)
            print(f"after: {load_line()}", file=sys.stderr)
            if args.profile:
                c, name = args.c[0], args.loop[0]
                os.environ[event_loop.ENV] = name
                prof = tmp / "study.prof"
                games = study_games(c, args.rounds)
                whole_study(url, c, games, tmp, profile=prof, run=runs[name])
                st = pstats.Stats(str(prof))
                total = sum(v for _, v in breakdown(prof))
                calls = 3 * games
                print(f"\nProfile of the whole study at C={c} on {name} ({calls} calls, {total:.2f} s own time in total, {1000 * total / calls:.2f} ms per call):\n")
                print("| where | share of client CPU | ms per call |\n|---|---|---|")
                for cat, t in breakdown(prof):
                    print(f"| {cat} | {t / total:.0%} | {1000 * t / calls:.2f} |")
                print("\nTop functions by own time:", file=sys.stderr)
                st.sort_stats("tottime").print_stats(15)
    finally:
        server.terminate()
        server.wait(timeout=10)
    keys = COLUMNS
    kind = "plain" if args.plain_server else "fast (uvloop, orjson bodies)"
    print(f"\n{load_line()}; 100 ms server ({kind}) in its own process; calls/s counted by the server (share of ideal C/L); client CPU ms per call; {args.rounds} rounds\n")
    print("| in flight | event loop | ideal C/L | raw sockets | bare `openai` SDK | aiohttp transport | lean transport | `Model.complete` (lean) | whole study (lean) | whole study (aiohttp) | whole study (SDK) | whole study (lean, 2 processes) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c, name, ideal, cells in rows:
        print(f"| {c} | {name} | {ideal:.0f}/s | " + " | ".join(f"{cells[k][0]:.0f}/s ({cells[k][0] / ideal:.0%})" for k in keys) + " |")
        print(f"| {c}: client CPU per call | {name} | | " + " | ".join(f"{cells[k][1]:.2f} ms" for k in keys) + " |")
        print(f"| {c}: server CPU per call | {name} | | " + " | ".join(f"{cells[k][2]:.2f} ms" for k in keys) + " |")


if __name__ == "__main__":
    main()
