"""Shared test fixtures: the real embedded model, a real OpenAI-compatible llama.cpp server on
127.0.0.1, the shared fixtures folder, and a helper to run a study file end to end."""

from __future__ import annotations

import collections
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

# The helpers live in tests/support/; they are named here as well because code outside the
# tests (benchmarks/body_bound.py) imports free_port and wait_http from this module.
from support.helpers import FAKE_OPENAI, ROOT, free_port, run_agora, wait_http  # noqa: F401

SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
#: pytest-xdist's worker count in a worker process (``make test`` runs ``-n 3``); 0 without xdist.
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
#: The embedded model's threads unless AGORA_THREADS is set: 2 in one test process, 1 in each of
#: several workers (llama.cpp's threads wait for each other, so two 2-thread models on 2 cores
#: stall each other).
THREADS = int(os.environ.get("AGORA_THREADS", "1" if WORKERS > 1 else "2"))
os.environ.setdefault("AGORA_THREADS", str(THREADS))

#: The test files that take longest, slowest first: each 35 s or more in a ``make test`` run on
#: 2 cores under other load (``--junitxml``'s times summed per file, 2026-11-26; 1396 tests,
#: 2273 s in all). Under xdist they are handed out before the others (``make test`` keeps this
#: order: ``--no-loadscope-reorder``), so that no worker is left alone with one of them at the
#: end. A file missing here only runs later; the order changes nothing else.
HEAVY_FIRST = (
    "tests/models/test_transports.py",
    "tests/house/test_conformance.py",
    "tests/e2e/test_ray_executor.py",
    "tests/games/subskills/test_study_and_profile.py",
    "tests/games/subskills/test_subskills.py",
    "tests/e2e/test_web_browser.py",
    "tests/e2e/test_profile_every_ready_study.py",
    "tests/e2e/test_llm_battery.py",
    "tests/e2e/test_rehearse.py",
    "tests/games/glee/test_glee_import.py",
    "tests/e2e/test_hosted_backends.py",
    "tests/e2e/test_llm_glee.py",
    "tests/web/test_web_app.py",
    "tests/e2e/test_llm_envy_points.py",
    "tests/e2e/test_robustness.py",
    "tests/games/glee/test_glee_theory.py",
    "tests/e2e/test_llm_envy_workplace.py",
    "tests/games/glee/test_glee_studies.py",
    "tests/e2e/test_store_engines.py",
    "tests/web/test_groups.py",
    "tests/games/envy/test_envy_workplace.py",
    "tests/e2e/test_study_integrity.py",
    "tests/e2e/test_web_families_browser.py",
    "tests/e2e/test_llm_commons.py",
    "tests/analysis/test_hierarchy.py",
    "tests/e2e/test_demo_report_truth.py",
    "tests/games/beauty_contest/test_beauty_contest.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In an xdist worker, the files of :data:`HEAVY_FIRST` come first, in its order; the rest
    keep their order (a stable sort). A run without xdist keeps the collection order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {path: i for i, path in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slowest-files", type=int, default=15, metavar="N", help="list the N test files of longest wall time at the end, with their CPU seconds (0: none)")


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process (all its threads) and of the child processes
    it has waited for (``agora`` subprocesses, servers stopped by a fixture)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_cpu_mark = [0.0]
#: Test file -> [wall seconds, CPU seconds] over its tests' setup, call and teardown.
_file_times: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _cpu_mark[0] = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Each phase's report carries the CPU seconds the phase took (``cpu_s`` in its
    ``user_properties``), so that xdist workers send them to the controller, which prints the
    summary."""
    outcome = yield
    now = _cpu_seconds()
    outcome.get_result().user_properties.append(("cpu_s", round(now - _cpu_mark[0], 4)))
    _cpu_mark[0] = now


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    cpu = dict(report.user_properties).get("cpu_s")
    if cpu is not None:  # a report of this plugin (run here or in an xdist worker)
        times = _file_times[report.nodeid.split("::", 1)[0]]
        times[0] += report.duration
        times[1] += float(cpu)  # type: ignore[arg-type]


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """The slowest test files by wall time (their tests' setup, call and teardown summed), with
    the CPU seconds they used (the test process's and its waited-for children's): CPU time is
    what a file costs the suite on a shared machine, where wall time also measures the others."""
    n = config.getoption("--slowest-files")
    if n <= 0 or not _file_times or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    ranked = sorted(_file_times.items(), key=lambda kv: -kv[1][0])
    k = min(n, len(ranked))
    terminalreporter.write_sep("=", f"slowest {k} test file{'s' if k != 1 else ''} (wall s, CPU s)")
    for path, (wall, cpu) in ranked[:n]:
        terminalreporter.write_line(f"{wall:8.2f} {cpu:8.2f}  {path}")
    wall, cpu = (sum(t[i] for t in _file_times.values()) for i in (0, 1))
    terminalreporter.write_line(f"{wall:8.2f} {cpu:8.2f}  all {len(ranked)} file{'s' if len(ranked) != 1 else ''}")


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is absent (not a CI checkout); fixture-based tests skipped")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def llama_server():
    """The llama-cpp-python OpenAI-compatible server with the embedded GGUF, on 127.0.0.1.
    Yields its base URL (``http://127.0.0.1:PORT/v1``); stopped at the end of the session."""
    from agorabench.models.embedded import embedded_model_path

    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(embedded_model_path()),
        "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", "1", "--n_threads_batch", "1",  # two 2-thread engines on 2 cores stall each other
        "--n_ctx", "4096", "--verbose", "False",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", proc=proc)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def write_study(tmp_path):
    """Write a study file (TOML text) into tmp_path and return its path."""

    def _write(text: str, name: str = "study.toml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def fake_openai():
    """Start tests/support/fake_openai.py with the given fault options; returns (base_url, stats_url).
    Every server started is stopped at the end of the test."""
    procs: list[subprocess.Popen] = []

    def _start(*options: str, port: int | None = None) -> tuple[str, str]:
        port = port or free_port()
        proc = subprocess.Popen([sys.executable, str(FAKE_OPENAI), str(port), *options], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(proc)
        wait_http(f"http://127.0.0.1:{port}/stats", timeout=30, proc=proc)
        return f"http://127.0.0.1:{port}/v1", f"http://127.0.0.1:{port}/stats"

    def _stop_all() -> None:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)

    _start.stop_all = _stop_all
    yield _start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def play_study(write_study, tmp_path):
    """Write a study file and play it through the command line; returns (study path, database)."""

    def _play(text: str, name: str = "study.toml") -> tuple[Path, Path]:
        path = write_study(text, name)
        db = tmp_path / (Path(name).stem + ".db")
        res = run_agora("run", str(path), "--db", str(db), "--quiet", timeout=300)
        assert res.returncode == 0, res.stderr
        return path, db

    return _play


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server on 127.0.0.1 for the whole session (see tests/support/pg_server.py)."""
    from support.pg_server import PostgresServer, pg_bin

    if not pg_bin("initdb"):
        if os.environ.get("CI"):
            pytest.fail("CI must run the PostgreSQL tests: scripts/setup.sh installs Debian's postgresql")
        pytest.skip("PostgreSQL is not installed (scripts/setup.sh installs Debian's postgresql as root)")
    server = PostgresServer()
    try:
        server.start()
    except Exception:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def make_db(request, tmp_path):
    """Fresh databases for one engine: ``make_db("name")`` gives an SQLite path or a new
    PostgreSQL database's URL. Tests using it run once per engine."""
    if request.param == "sqlite":
        return lambda name: str(tmp_path / f"{name}.db")
    server = request.getfixturevalue("postgres")
    return lambda name: server.new_database()
