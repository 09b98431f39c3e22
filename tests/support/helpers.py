"""Process and network helpers: the repository root, a free loopback port, waiting for a server
to answer, the real command line run as a subprocess, and the request count of the fake server."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

#: The repository root (this file lives in ``tests/support/``).
ROOT = Path(__file__).resolve().parents[2]
#: The fault-injecting OpenAI/Anthropic server, started by path as its own process.
FAKE_OPENAI = Path(__file__).resolve().with_name("fake_openai.py")


def load_script(name: str):
    """``scripts/<name>.py`` imported as a module (``_script_<name>``, registered in
    ``sys.modules`` so its dataclasses and pickles resolve); the scripts are not a package."""
    spec = importlib.util.spec_from_file_location(f"_script_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except Exception:
            time.sleep(0.3)
    raise TimeoutError(url)


def run_agora(*args: str, cwd: Path | None = None, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the real command line (``python -m agorabench ...``)."""
    return subprocess.run(
        [sys.executable, "-m", "agorabench", *args],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def server_requests(stats_url: str) -> int:
    with urllib.request.urlopen(stats_url, timeout=5) as resp:
        return json.loads(resp.read())["requests"]


def agora(capsys, *args: str) -> tuple[int, str, str]:
    """The command line in this process (faster than a subprocess); returns (rc, stdout, stderr)."""
    from agorabench.cli import main

    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str, *words: str) -> str:
    """Exit status 2 and exactly one line on stderr, ``agora: error: ...``, holding each of
    ``words`` (any case) and no traceback; returns that line."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("agora: error: "), err
    assert "Traceback" not in err
    for w in words:
        assert w.lower() in lines[0].lower(), (w, lines[0])
    return lines[0]


@contextlib.contextmanager
def serving(script: Path, *args: str, path: str = "/v1") -> Iterator[str]:
    """Run ``script PORT *args`` as a loopback server on a free port until it answers
    ``/stats``; yields ``http://127.0.0.1:PORT`` + ``path`` and stops the server on exit."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(Path(script).resolve()), str(port), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_http(f"http://127.0.0.1:{port}/stats", timeout=30, proc=proc)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
