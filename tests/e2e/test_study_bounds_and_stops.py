"""Issue 22: bounded studies and clean stops. An oversized design is refused in one line before
it is expanded; a study of scripted players stops on SIGINT or SIGTERM, keeps what it stored and
resumes; a damaged database is named as such; strategy parameters must be finite numbers."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agorabench.cli import main
from support.helpers import ROOT, agora, one_line_error
from support.studies import envy_points, model, sampled_seats, scripted


def scripted_study(name: str, repeats: int, models: list[dict] | None = None, **settings) -> str:
    """Ordered pairs of scripted players (by default always-B and the self-maximiser, 6 games a
    repeat) on the three matrices, in one situation: leading, marginal, the peer moving B."""
    models = models or [scripted("always-b"), scripted("self-max")]
    situation = {"peer_status": "leading", "margin": "marginal", "peer_move": "B"}
    return envy_points(name, models, repeats=repeats, **settings, grid={"matrix": ["M1", "M2", "M3"]}, fixed=situation)


def _stored(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return conn.execute("select count(*) from games where status = 'done'").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def _ctrl_c_reaches() -> None:
    """In the child before it starts: Ctrl-C (SIGINT) at its default, as in a terminal. A test
    run started in the background of a non-interactive shell (``make test &``) has SIGINT
    ignored, every child inherits that, and Python then leaves it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _agora_process(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "agorabench", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_reaches)


# item 5: Ctrl-C and SIGTERM stop a study of scripted players ---------------------------------

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_scripted_study_stops_on_a_signal_keeps_its_games_and_resumes(sig, tmp_path, capsys):
    """6,000 scripted games take several CPU seconds; the first group commit (256 games, or
    half a second) is seen within 50 ms and the signal sent then, so the study is mid-run. The
    stop is a signal to a process of its own; the rerun runs in this process."""
    study, db = tmp_path / "many.toml", tmp_path / "many.db"
    study.write_text(scripted_study("many", 1000))  # 6,000 games of scripted players
    proc = _agora_process("run", str(study), "--db", str(db), "--quiet")
    deadline = time.monotonic() + 180
    while _stored(db) == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the study ended before it could be stopped"
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=20)  # generous: a stop lands within a second
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{sig.name} did not stop the study within 20 s")
    assert proc.returncode == 130, err
    assert "interrupted; finished games are stored" in err and "Traceback" not in err
    stored = _stored(db)
    assert 0 < stored < 6_000
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        assert conn.execute("select count(*) from claims").fetchone()[0] == 0  # released on the way out
    if sig == signal.SIGINT:  # a rerun plays exactly the rest
        rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
        assert rc == 0, err
        assert f"6000 games, {stored} already done, {6_000 - stored} played" in out


# item 9: strategy parameters are finite numbers ----------------------------------------------

GLEE_SCRIPTED = """
name = "glee"
game = "glee.negotiation"
matchups = "seats"
seats = [{ alice = "t", bob = "acc" }]

[fixed]
horizon = 1
messages = false

[[models]]
name = "t"
spec = "strategy/truthful"
params = { factor = PARAM }

[[models]]
name = "acc"
spec = "strategy/always-accept"
"""


@pytest.mark.parametrize(
    "strategy,param,value",
    [
        ("fehr-schmidt", "alpha", "inf"),
        ("fehr-schmidt", "beta", "-inf"),
        ("fehr-schmidt", "alpha", "nan"),
        ("fehr-schmidt", "alpha", '"nan"'),  # text that reads as NaN
        ("fehr-schmidt", "beta", '"-Infinity"'),
        ("fehr-schmidt-logit", "lam", "nan"),
        ("fehr-schmidt-logit", "lam", '"inf"'),
    ],
)
def test_infinite_or_nan_strategy_parameters_are_one_line_errors(strategy, param, value, tmp_path, capsys):
    text = scripted_study("p", 1).replace('spec = "strategy/self-max"', f'spec = "strategy/{strategy}"\nparams = {{ {param} = {value} }}')
    study, db = tmp_path / "p.toml", tmp_path / "p.db"
    study.write_text(text)
    line = one_line_error(*agora(capsys, "run", str(study), "--db", str(db), "--quiet")[::2], param, "finite")
    assert value.strip('"').lower().lstrip("-")[:3] in line.lower()
    if db.exists():  # refused before any game
        with sqlite3.connect(db) as conn:
            assert conn.execute("select count(*) from games").fetchone()[0] == 0


@pytest.mark.parametrize("value", ["inf", "nan", '"-inf"'])
def test_infinite_or_nan_glee_strategy_parameters_are_one_line_errors(value, tmp_path, capsys):
    study = tmp_path / "g.toml"
    study.write_text(GLEE_SCRIPTED.replace("PARAM", value))
    one_line_error(*agora(capsys, "run", str(study), "--db", str(tmp_path / "g.db"), "--quiet")[::2], "factor", "finite")


def test_finite_strategy_parameters_still_play(tmp_path, capsys):
    finite = scripted("self-max", "fehr-schmidt-logit", params={"alpha": 1e300, "beta": "0.5", "lam": 2})
    study = tmp_path / "ok.toml"
    study.write_text(scripted_study("ok", 1, [scripted("always-b"), finite]))
    rc, out, err = agora(capsys, "run", str(study), "--db", str(tmp_path / "ok.db"), "--quiet")
    assert rc == 0 and "6 games, 0 already done, 6 played, 0 errors" in out, err


# item 6: a damaged database is named as such ------------------------------------------------

@pytest.fixture
def played(tmp_path, capsys):
    """A finished study of 120 scripted games: (study file, database)."""
    study, db = tmp_path / "done.toml", tmp_path / "done.db"
    study.write_text(scripted_study("done", 20))
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "120 played" in out, err
    with sqlite3.connect(db) as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
    return study, db


def _break_page(db: Path, table: str) -> None:
    """Overwrite the cell pointers of ``table``'s root page (an interior page: the table spans
    several pages), as a torn write or a bad disk sector would. A table without rowids
    (``turns``) is stored as an index b-tree, whose interior pages have type 2."""
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("pragma page_size").fetchone()[0]
        root = conn.execute("select rootpage from sqlite_master where name = ?", (table,)).fetchone()[0]
    with open(db, "r+b") as f:
        f.seek((root - 1) * page_size)
        assert f.read(1) in (b"\x05", b"\x02")  # an interior table (or index b-tree) page
        f.seek((root - 1) * page_size + 12)
        f.write(b"\xff" * 32)


def test_a_database_that_fails_the_integrity_check_is_refused_in_one_line(played, tmp_path, capsys):
    study, db = played
    _break_page(db, "turns")  # the games table, read by `run`, is intact
    before = db.read_bytes()
    line = one_line_error(*agora(capsys, "run", str(study), "--db", str(db), "--quiet")[::2], "damaged", str(db), ".recover")
    assert "already done" not in line
    assert db.read_bytes() == before  # nothing written to it
    one_line_error(*agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "rep"))[::2], "damaged", ".recover")
    one_line_error(*agora(capsys, "export", str(study), "--db", str(db), "--out", str(tmp_path / "g.csv"))[::2], "damaged")


def test_undecodable_text_in_a_database_is_named_damage_not_a_traceback(played, tmp_path, capsys):
    study, db = played
    with sqlite3.connect(db) as conn:
        conn.execute("update turns set raw = cast(x'41ff42' as text) where (game_id, idx) in (select game_id, idx from turns limit 2)")
        conn.execute("update games set error = cast(x'c3' as text) where rowid in (select rowid from games limit 1)")
        conn.commit()
        conn.execute("pragma wal_checkpoint(truncate)")
    one_line_error(*agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "rep"))[::2], "damaged", "decode", ".recover")
    one_line_error(*agora(capsys, "export", str(study), "--db", str(db), "--table", "turns", "--out", str(tmp_path / "t.csv"))[::2], "damaged")


# item 2: a study's size is bounded, counted before it is expanded ----------------------------

def _models(names) -> str:
    return "".join(f'[[models]]\nname = "{n}"\nspec = "strategy/self-max"\n' for n in names)


OVERSIZED = {
    # 10,000 models in ordered pairs: 3 x 9,999 x 10,000 games
    "models": (scripted_study("huge", 1, [scripted(f"m{i}", "self-max") for i in range(10_000)]), "299,970,000 games"),
    # a grid of 10^10 configurations (never built)
    "grid": (
        envy_points(
            "grid",
            [scripted("always-b"), scripted("self-max")],
            repeats=1,
            grid={f"k{j}": list(range(100)) for j in range(5)},
            fixed={"peer_status": "leading", "margin": "marginal", "peer_move": "B"},
        ),
        "10,000,000,000 configurations",
    ),
}


@pytest.mark.parametrize("kind", sorted(OVERSIZED))
def test_an_oversized_study_is_refused_in_one_line_before_it_is_expanded(kind, tmp_path):
    """In a process limited to 1.5 GB of address space: expanding first (the old way) runs out
    of memory long before the end."""
    text, count = OVERSIZED[kind]
    study, db = tmp_path / "huge.toml", tmp_path / "huge.db"
    study.write_text(text)
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000));"
        "from agorabench.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", code, "run", str(study), "--db", str(db), "--quiet"], env=env, capture_output=True, text=True, timeout=120)
    line = one_line_error(proc.returncode, proc.stderr, count, "max_games = 10,000,000")
    assert "Traceback" not in proc.stderr and not db.exists(), line


def test_max_games_is_set_in_the_study_file(tmp_path, capsys):
    # 2 pairs x 3 matrices x 2 repeats = 12 games
    study, db = tmp_path / "capped.toml", tmp_path / "capped.db"
    study.write_text(scripted_study("capped", 2, max_games=11))
    one_line_error(*agora(capsys, "run", str(study), "--db", str(db), "--quiet")[::2], "12 games", "max_games = 11")
    assert not db.exists()
    study.write_text(scripted_study("capped", 2, max_games=12))
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "12 games, 0 already done, 12 played" in out, err
    study.write_text(scripted_study("capped", 2, max_games=0))
    one_line_error(*agora(capsys, "run", str(study), "--db", str(db), "--quiet")[::2], "max_games")


def test_parts_count_together_against_max_games(tmp_path, capsys):
    text = """
name = "two"
max_games = 10
[[parts]]
game = "envy.points"
[parts.grid]
matrix = ["M1", "M2", "M3"]
[[parts]]
game = "envy.points"
[parts.grid]
matrix = ["M1", "M2", "M3"]
peer_status = ["lagging"]
""" + _models(["a", "b"])
    study = tmp_path / "two.toml"
    study.write_text(text)  # 6 games per part, 12 in all
    one_line_error(*agora(capsys, "run", str(study), "--db", str(tmp_path / "two.db"), "--quiet")[::2], "12 games", "max_games = 10")


@pytest.mark.parametrize("study", sorted((ROOT / "studies").glob("*.toml")) + ["seats", "all_pairs", "ordered_pairs"], ids=str)
def test_the_count_is_the_number_of_games_expanded(study, tmp_path):
    from agorabench.core.study import load_study

    if isinstance(study, str):
        path = tmp_path / f"{study}.toml"
        path.write_text(sampled_seats(study, third_model=True))
        study = path
    loaded = load_study(study)
    specs = loaded.expand()
    assert loaded.count_games() == len(specs) == len({s.id for s in specs})


def test_a_large_allowed_study_streams_instead_of_expanding_first(tmp_path):
    """5.4 million games (6 strategies in 30 ordered pairs x 3 matrices x 60,000 repeats), in a
    process limited to 1.5 GB of address space: the games are generated as they are claimed, so
    the first ones are stored and a stop keeps them (expanding first needs several GB)."""
    names = ["always-b", "self-max", "spiteful", "random", "fehr-schmidt", "fehr-schmidt-logit"]
    study, db = tmp_path / "large.toml", tmp_path / "large.db"
    study.write_text(scripted_study("large", 60_000, [scripted(n) for n in names]))
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000));"
        "from agorabench.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", code, "run", str(study), "--db", str(db), "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_reaches)
    deadline = time.monotonic() + 120  # generous: the first games are stored within seconds
    while _stored(db) < 100 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the first group commit is seen at once: the child stops sooner
    running = proc.poll() is None
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    assert running and proc.returncode == 130, err
    assert _stored(db) >= 100 and "Traceback" not in err


def url_study(url: str) -> str:
    """A hosted model at ``url`` against a random player, on the game's default situation."""
    return envy_points("urls", [model("a", "openai/x", base_url=url), scripted("b", "random")], grid={})


@pytest.mark.parametrize("url", ["not a url", "ftp://host/v1", "http://", "http://host:99999/v1", "127.0.0.1:8000/v1"])
def test_a_base_url_that_is_no_http_url_is_one_line_in_the_file_and_on_the_command_line(url, tmp_path, capsys):
    """``base_url = "not a url"`` once crashed the probe with a traceback."""
    path = tmp_path / "urls.toml"
    path.write_text(url_study(url), encoding="utf-8")
    for args in (["run", str(path)], ["run", str(path), "--model", f"openai/x@{url}", "--model", "strategy/random"]):
        rc = main([*args, "--db", str(tmp_path / "u.db"), "--quiet"])
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert rc == 2 and len(lines) == 1 and "is not an http(s) URL" in lines[0], err
    assert not (tmp_path / "u.db").exists()


def test_a_url_with_credentials_is_redacted_in_its_error(tmp_path, capsys):
    path = tmp_path / "x.toml"
    path.write_text(url_study("http://127.0.0.1:9/v1"), encoding="utf-8")
    rc = main(["run", str(path), "--model", "openai/x@http://user:s3cret@host:99999/v1", "--model", "strategy/random"])
    err = capsys.readouterr().err
    assert rc == 2 and "s3cret" not in err and "[redacted]" in err, err
