"""Load on the web app: N simulated participants at once, each an HTTP client with its own
cookies on loopback, play a short GLEE bargaining game (2 rounds, as Alice) against a scripted
Bob from the entry link to the completion code, against the real `agora serve` in its own
process. Prints wall time, requests and page latencies; checks that every game is stored with
all its turns.

    .venv/bin/python benchmarks/web_load.py [--participants 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import httpx

STUDY = """
name = "web_load"
game = "glee.bargaining"
matchups = "seats"
seats = [{ alice = "participant", bob = "scripted" }]
[fixed]
money = 100
horizon = 2
[[models]]
name = "participant"
spec = "human"
[[models]]
name = "scripted"
spec = "strategy/always-reject"
[web]
bonus = "0.01 * alice_gain"
starts_per_minute = 0   # every simulated participant comes from 127.0.0.1
max_live = 100
[[web.quiz]]
question = "Ready?"
options = ["no", "yes"]
answer = "yes"
[[web.questionnaire]]
name = "comment"
question = "Any comment?"
"""

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SEQ = re.compile(r'name="seq" value="(\d+)"')


class Client:
    def __init__(self, base: str, pid: str, latencies: list[float]) -> None:
        self.c = httpx.AsyncClient(base_url=base, follow_redirects=True, timeout=60)
        self.pid = pid
        self.latencies = latencies
        self.requests = 0

    async def _do(self, method: str, url: str, **kw) -> str:
        t = time.perf_counter()
        r = await self.c.request(method, url, **kw)
        self.latencies.append(time.perf_counter() - t)
        self.requests += 1 + len(r.history)
        r.raise_for_status()
        return r.text

    async def until(self, url: str, marker: str, deadline: float) -> str:
        while True:
            page = await self._do("GET", url)
            if marker in page:
                return page
            if time.time() > deadline:
                raise TimeoutError(f"{self.pid}: {marker!r} never came")
            await asyncio.sleep(0.05)

    async def journey(self, timeout: float) -> str:
        deadline = time.time() + timeout
        r = await self.c.get(f"/start?PROLIFIC_PID={self.pid}")
        url = r.url.path
        page = r.text

        async def post(stage: str, page: str, **data: str) -> str:
            return await self._do("POST", f"{url}/{stage}", data={"csrf": CSRF.search(page).group(1), **data})

        page = await post("consent", page, agree="yes")
        page = await post("instructions", page)
        page = await post("quiz", page, q0="yes")
        page = await self.until(url, 'name="alice_gain"', deadline)
        page = await post("play", page, seq=SEQ.search(page).group(1), alice_gain="60", bob_gain="40")
        page = await self.until(url, 'name="decision"', deadline)
        page = await post("play", page, seq=SEQ.search(page).group(1), decision="accept")
        page = await self.until(url, "submit-results", deadline)  # the results page, then the questionnaire
        page = await post("results", page)
        page = await self.until(url, "submit-questionnaire", deadline)
        page = await post("questionnaire", page, a_comment="fine")
        await self.c.aclose()
        return re.search(r'id="code">([^<]+)<', page).group(1)


async def run_load(base: str, n: int, timeout: float = 120.0) -> dict[str, float]:
    latencies: list[float] = []
    clients = [Client(base, f"LOAD{i:04d}", latencies) for i in range(n)]
    t = time.perf_counter()
    codes = await asyncio.gather(*(c.journey(timeout) for c in clients))
    wall = time.perf_counter() - t
    latencies.sort()
    return {
        "participants": n,
        "codes": len(set(codes)),
        "wall_s": wall,
        "requests": sum(c.requests for c in clients),
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
    }


def serve(study: Path, db: Path, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "agorabench", "serve", str(study), "--db", str(db), "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "AGORA_DASHBOARD_TOKEN": "bench"})
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("agora serve did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--participants", type=int, default=50)
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / "web_load.toml"
        study.write_text(STUDY)
        proc = serve(study, Path(tmp) / "load.db", args.port)
        try:
            result = asyncio.run(run_load(f"http://127.0.0.1:{args.port}", args.participants))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(
        f"{result['participants']} participants: {result['wall_s']:.1f} s wall, {result['requests']} requests "
        f"({result['requests'] / result['wall_s']:.0f}/s), page latency p50 {result['p50_ms']:.0f} ms, p95 {result['p95_ms']:.0f} ms"
    )


if __name__ == "__main__":
    main()
