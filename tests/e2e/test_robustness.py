"""Issue 9: never a traceback, never a stuck study. Poison answers, store failures, nonsense
values, bad files and paths, secrets, dead backends, drift between a study file and its
database, reading one game, and the order of simultaneous moves — each reproduced against the
real command line, a real HTTP server (tests/support/fake_openai.py) and real SQLite."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from agorabench.cli import main
from agorabench.core.actions import Action
from agorabench.core.table import Prompt, Reply, Table
from agorabench.store.store import Store, StoreError
from support.helpers import ROOT, agora, free_port, one_line_error, server_requests
from support.studies import envy_points, paper_grid, scripted


def envy_study(url: str, name: str = "robust", model: str = "fake", timeout: float = 30, attempts: int = 3, **remote) -> str:
    """The hosted model ``model`` at ``url`` against always-B on M1 and M2 (leading, marginal,
    peer move B): 4 games, 2 of them with the hosted model as the focal player."""
    hosted = {"name": "remote", "spec": f"openai/{model}", "base_url": url, "timeout": timeout, "max_attempts": attempts, **remote}
    grid = paper_grid(matrix=["M1", "M2"], peer_status=["leading"], margin=["marginal"], peer_move=["B"])
    return envy_points(name, [hosted, scripted("b", "always-b")], grid=grid)

NEGOTIATION = """
name = "neg"
game = "glee.negotiation"
matchups = "seats"
seats = [{{ alice = "remote", bob = "acc" }}]

[fixed]
horizon = 1
messages = true

[grid]
money = [100, 10000]

[[models]]
name = "remote"
spec = "openai/fake"
base_url = "{url}"
max_attempts = 1

[[models]]
name = "acc"
spec = "strategy/always-accept"
"""


def envy(write_study, url, name="robust", model="fake", timeout=30, attempts=3, file="study.toml"):
    return write_study(envy_study(url, name=name, model=model, timeout=timeout, attempts=attempts), name=file)


# 1. poison answers -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["surrogate", "surrogate-text", "unclosed-tags", "deep-json"])
def test_poison_replies_become_valid_or_invalid_turns_and_a_rerun_finishes(kind, tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai("--poison", kind)
    path, db = envy(write_study, url), tmp_path / "p.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0 and "4 played, 0 errors" in out, out + err
    con = sqlite3.connect(db)
    rows = con.execute("select t.valid, t.error, t.raw from turns t join games g on g.id = t.game_id where g.seats like '%\"focal\": \"remote\"%'").fetchall()
    assert len(rows) == 6
    if kind == "surrogate":  # half an emoji in free text: a valid turn, the half replaced
        assert all(valid and "nice \ufffd" in raw for valid, _, raw in rows)
    else:
        assert not any(valid for valid, _, _ in rows) and all(error for _, error, _ in rows)
    if kind == "unclosed-tags":  # 1 MB reply: cut and marked
        assert all(len(raw) < 21_000 and raw.endswith("characters]") for _, _, raw in rows)
    calls = server_requests(stats)
    rc, out, _ = agora(capsys, "run", str(path), "--db", str(db), "--quiet")  # cached replies replay safely
    assert rc == 0 and "4 already done, 0 played" in out and server_requests(stats) == calls
    if kind == "surrogate":  # a reply cached before sanitising existed replays into a new database
        with sqlite3.connect(db) as con:
            assert con.execute("update cache set response = replace(response, '\\ufffd', '\\ud83d')").rowcount == 6
        rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "replay.db"), "--cache", str(db), "--quiet")
        assert rc == 0 and "4 played, 0 errors; 0 model calls" in out, out + err


@pytest.mark.parametrize("kind,reason", [("infinity", "price"), ("huge", "price"), ("deep-object", "price"), ("half-emoji", None)])
def test_poison_numbers_and_json_are_invalid_turns_with_a_reason(kind, reason, tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai("--poison", kind)
    path, db = write_study(NEGOTIATION.format(url=url)), tmp_path / "n.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0 and "2 played, 0 errors" in out, out + err
    con = sqlite3.connect(db)
    turns = con.execute("select valid, error, action from turns where role = 'alice'").fetchall()
    assert len(turns) == 2
    metrics = [m for (m,) in con.execute("select metrics from games")]
    assert all(m is not None and "Infinity" not in m and "NaN" not in m for m in metrics)
    if reason is None:  # a JSON-escaped half emoji in the message: valid, the half replaced
        assert all(valid and json.loads(action)["message"] == "deal \ufffd" for valid, _, action in turns), turns
    else:
        assert not any(valid for valid, _, _ in turns) and all(reason in (error or "") for _, error, _ in turns), turns


def test_an_offer_far_above_the_money_at_stake_is_invalid():
    from agorabench.games.glee.negotiation import price_type

    kind = price_type(False, 100.0)
    assert kind.parse('{"price": 900}').price == 900
    with pytest.raises(Exception, match="far above"):
        kind.parse('{"price": 5000}')


# 2. store errors ---------------------------------------------------------------------------

def fill_disk_after(monkeypatch, games: int, group: int, interval: float = 0.5):
    """The database is "full" once ``games`` games are stored; finished games are committed in
    groups of ``group``. Returns the real ``Store._save_games``."""
    from agorabench.store.store import GameWriter

    real = Store._save_games
    saved = {"n": 0}

    def fill_up(self, ids, batch):
        if saved["n"] + len(ids) > games:
            raise sa.exc.OperationalError("INSERT INTO games", {}, sqlite3.OperationalError("database or disk is full"))
        saved["n"] += len(ids)
        return real(self, ids, batch)

    monkeypatch.setattr(GameWriter.__init__, "__defaults__", (group, interval, None))
    monkeypatch.setattr(Store, "_save_games", fill_up)
    return real


def test_disk_full_stops_the_run_cleanly_and_a_rerun_finishes(tmp_path, write_study, monkeypatch, capsys):
    path = write_study(SCRIPTED)
    db = tmp_path / "full.db"
    # one game per commit, so exactly the first five games fit before the disk is "full"
    real = fill_disk_after(monkeypatch, 5, 1)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "1")
    one_line_error(rc, err, "disk is full", "run the study again")
    assert sqlite3.connect(db).execute("select count(*) from games where status = 'done'").fetchone()[0] == 5
    monkeypatch.setattr(Store, "_save_games", real)
    rc, out, _ = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0 and "24 games, 5 already done, 19 played, 0 errors" in out, out


def test_after_a_store_failure_the_closing_count_is_what_committed(tmp_path, write_study, monkeypatch, capsys):
    """Games wait for their group's transaction: when it fails, they were played but are not
    stored, and the closing line counts only the committed ones (it once counted the played)."""
    import re

    path = write_study(SCRIPTED)
    db = tmp_path / "full.db"
    fill_disk_after(monkeypatch, 5, 4, interval=30.0)  # groups of four games: the second does not fit
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "4")
    one_line_error(rc, err, "disk is full", "run the study again")
    stored = sqlite3.connect(db).execute("select count(*) from games").fetchone()[0]
    said = re.search(r"(\d+) game\(s\) finished in it are stored", err)
    # the group that does not fit is written game by game: the fifth game still fits
    assert said and int(said.group(1)) == stored == 5, (err, stored)
    assert "were not stored and will be played again" in err


def test_a_value_sqlite_cannot_hold_is_a_store_error_not_a_crash(tmp_path):
    store = Store(tmp_path / "s.db")
    with pytest.raises(StoreError, match="could not store game"):
        store.save_game(id="g", study="s", game="x", config={}, seats={}, repeat=0, seed=2**70, prompt_version="", status="done", outcome={}, metrics={}, error=None, turn_records=[])
    store.dispose()


#: always-B and the self-maximiser on the three matrices, both statuses and margins, the peer
#: moving B: 24 games
SCRIPTED = envy_points("scripted", [scripted("always-b"), scripted("self-max")], grid=paper_grid(peer_move=None), fixed={"peer_move": "B"})


# 3. nonsense values ------------------------------------------------------------------------

BAD_VALUES = [
    ('max_concurrency = 0', "max_concurrency"),
    ('max_concurrency = -1', "max_concurrency"),
    ('max_tokens = -5', "max_tokens"),
    ('temperature = -1.0', "temperature"),
    ('price_input = -2.0', "price_input"),
    ('timeout = inf', "timeout"),
]


@pytest.mark.parametrize("line,field", BAD_VALUES)
def test_nonsense_model_settings_are_one_line_errors_naming_the_field(line, field, write_study, tmp_path, capsys):
    text = SCRIPTED.replace('spec = "strategy/self-max"', f'spec = "strategy/self-max"\n{line}')
    rc, _, err = agora(capsys, "run", str(write_study(text)), "--db", str(tmp_path / "x.db"))
    one_line_error(rc, err, field)


@pytest.mark.parametrize(
    "edit,field",
    [
        (lambda t: t.replace('name = "scripted"', 'name = ""'), "name"),
        (lambda t: t.replace('[grid]', 'repeats = 100000000\n[grid]'), "repeats"),
        (lambda t: t.replace('[grid]', 'seed = 9223372036854775807\n[grid]'), "seed"),
        (lambda t: t.replace('matrix = ["M1", "M2", "M3"]', 'matrix = []'), "matrix"),
        (lambda t: t[: t.index("[[models]]")] + "models = []\n", "models"),
    ],
)
def test_nonsense_study_settings_are_one_line_errors_naming_the_field(edit, field, write_study, tmp_path, capsys):
    rc, _, err = agora(capsys, "run", str(write_study(edit(SCRIPTED))), "--db", str(tmp_path / "x.db"))
    one_line_error(rc, err, field)


@pytest.mark.parametrize(
    "game,fixed,field",
    [
        ("glee.bargaining", "money = inf", "money"),
        ("glee.bargaining", "horizon = 100000000", "horizon"),
        ("glee.negotiation", "infinite_rounds = 100000000", "infinite_rounds"),
        ("commons", "months = 100000000", "months"),
        ("commons", "collapse_threshold = -5", "collapse_threshold"),
    ],
)
def test_nonsense_game_parameters_are_one_line_errors_naming_the_field(game, fixed, field, write_study, tmp_path, capsys):
    text = f'name = "g"\ngame = "{game}"\n[fixed]\n{fixed}\n[[models]]\nname = "r"\nspec = "strategy/random"\n'
    rc, _, err = agora(capsys, "run", str(write_study(text)), "--db", str(tmp_path / "x.db"))
    one_line_error(rc, err, field)


def test_zero_concurrency_on_the_command_line_is_refused(write_study, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", str(write_study(SCRIPTED)), "--concurrency", "0"])
    assert exc.value.code == 2 and "at least 1" in capsys.readouterr().err


# 4. bad files and paths ----------------------------------------------------------------------

@pytest.fixture
def played(tmp_path, write_study, capsys):
    """A finished scripted study: (study file, database)."""
    path, db = write_study(SCRIPTED), tmp_path / "played.db"
    rc, _, _ = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0
    return path, db


def test_bad_study_files_are_one_line_errors(tmp_path, write_study, capsys):
    latin = tmp_path / "latin.toml"
    latin.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    one_line_error(*agora(capsys, "run", str(latin))[::2], "utf-8")
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    one_line_error(*agora(capsys, "run", str(folder))[::2], "folder")
    wrong_type = SCRIPTED.replace('spec = "strategy/self-max"', 'spec = "strategy/fehr-schmidt"\nparams = { alpha = "lots" }')
    one_line_error(*agora(capsys, "run", str(write_study(wrong_type, "wt.toml")), "--db", str(tmp_path / "w.db"))[::2], "fehr-schmidt")


def test_bad_databases_and_output_paths_are_one_line_errors(played, tmp_path, capsys):
    path, db = played
    folder = tmp_path / "dir.db"
    folder.mkdir()
    text = tmp_path / "notes.db"
    text.write_text("these are my notes, not a database\n" * 100)
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(db.read_bytes()[: db.stat().st_size // 3])
    for bad in (folder, text, truncated):
        one_line_error(*agora(capsys, "run", str(path), "--db", str(bad), "--quiet")[::2], "database")
        one_line_error(*agora(capsys, "export", str(path), "--db", str(bad), "--out", str(tmp_path / "x.csv"))[::2])
    rc, _, err = agora(capsys, "run", str(path), "--db", f"postgresql+psycopg://u:hunter2pw@127.0.0.1:{free_port()}/x", "--quiet")
    one_line_error(rc, err, "database")
    assert "hunter2pw" not in err
    one_line_error(*agora(capsys, "run", str(path), "--db", "mysql+mysqldb://u@127.0.0.1/x", "--quiet")[::2], "driver")
    one_line_error(*agora(capsys, "run", str(path), "--db", str(db), "--cache", str(folder), "--quiet")[::2], "folder")
    one_line_error(*agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "missing" / "x.csv"))[::2], "does not exist")
    one_line_error(*agora(capsys, "export", str(path), "--db", str(db), "--out", str(folder))[::2], "folder")
    one_line_error(*agora(capsys, "report", str(path), "--db", str(db), "--out", str(text))[::2], "is a file")


def test_report_and_export_read_a_read_only_database_and_create_nothing(played, tmp_path, capsys):
    path, db = played
    shared = Path(tempfile.mkdtemp(prefix="agora-archive-"))
    archive = shared / "archive"  # read-only for anyone but root; byte-identical afterwards
    archive.mkdir()
    copy, study = archive / "study.db", shared / "study.toml"
    shutil.copy(db, copy)
    shutil.copy(path, study)
    before = (sorted(os.listdir(archive)), copy.read_bytes())
    os.chmod(copy, 0o444)
    os.chmod(archive, 0o555)
    os.chmod(shared, 0o755)
    try:
        rc, o, e = agora(capsys, "export", str(study), "--db", str(copy), "--out", str(tmp_path / "games.csv"))
        assert rc == 0 and "wrote 24 rows" in o, o + e
        rc, o, e = agora(capsys, "report", str(study), "--db", str(copy), "--out", str(tmp_path / "rep"))
        assert rc == 0 and (tmp_path / "rep" / "index.html").exists(), e
        assert (sorted(os.listdir(archive)), copy.read_bytes()) == before
    finally:
        os.chmod(archive, 0o755)
        shutil.rmtree(shared)


# 5. secrets ----------------------------------------------------------------------------------

KEY = "sk-agora-test-9f8e7d6c5b4a39281706"


def _nowhere(secret: str, *places: Path | str) -> None:
    for place in places:
        if isinstance(place, Path):
            files = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]
            for f in files:
                assert secret.encode() not in f.read_bytes(), f
        else:
            assert secret not in place


def test_an_echoed_api_key_appears_nowhere(tmp_path, write_study, fake_openai, capsys, monkeypatch):
    monkeypatch.setenv("ECHO_KEY", KEY)
    url, stats = fake_openai("--echo-key")
    path, db = write_study(envy_study(url, name="secret", api_key_env="ECHO_KEY")), tmp_path / "runs" / "s.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")  # the probe is refused
    one_line_error(rc, err, "unauthorised")
    rc, out2, err2 = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--concurrency", "1")
    assert rc == 1 and "2 errors" in out2
    assert server_requests(stats) == 1  # one chat call: a 401 stops the model's games at once
    errors = [e for (e,) in sqlite3.connect(db).execute("select error from games where status = 'error'")]
    assert len(errors) == 2 and all("unauthorised" in e for e in errors)
    assert agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "runs" / "g.csv"))[0] == 0
    assert agora(capsys, "export", str(path), "--db", str(db), "--table", "turns", "--out", str(tmp_path / "runs" / "t.csv"))[0] == 0
    assert agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "runs" / "rep"))[0] == 0
    _nowhere(KEY, tmp_path / "runs", out + err + out2 + err2)


def test_redaction_removes_keys_url_credentials_and_tokens_but_not_prose():
    from agorabench.redact import redact, register_secret

    register_secret("sk-unit-test-0123456789")
    text = "key sk-unit-test-0123456789, Authorization: Bearer abc0123456789defghij, http://bob:pw@host/v1"
    assert redact(text) == "key [redacted], Authorization: Bearer [redacted], http://[redacted]@host/v1"
    prose = "The bearer responsibility is shared; see https://example.org/a@b and 1,000 points."
    assert redact(prose) == prose


def test_credentials_in_a_base_url_are_not_stored(tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai()
    secret_url = url.replace("http://", "http://alice:pa55-w0rd-xyz@")
    path, db = envy(write_study, secret_url), tmp_path / "c" / "c.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0 and "4 played" in out, out + err
    _nowhere("pa55-w0rd-xyz", db.parent, out + err)


# 6. two processes on one study ------------------------------------------------------------------

def test_two_processes_share_a_study_instead_of_both_playing_it(tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai("--latency", "0.3")
    path = envy(write_study, url).with_name("study.toml")
    text = path.read_text().replace('matrix = ["M1", "M2"]', 'matrix = ["M1", "M2", "M3"]').replace('peer_move = ["B"]', 'peer_move = ["A", "B", "C", "D"]')
    path.write_text(text)
    single = tmp_path / "single.db"
    assert agora(capsys, "run", str(path), "--db", str(single), "--quiet", "--concurrency", "4")[0] == 0  # the reference: one run, here
    calls_single = server_requests(stats)
    shared = tmp_path / "shared.db"
    # one game at a time each: one process alone would need over 10 s, so the two overlap
    cmd = [sys.executable, "-m", "agorabench", "run", str(path), "--db", str(shared), "--quiet", "--concurrency", "1"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert server_requests(stats) - calls_single == calls_single, outs  # together, exactly one run's calls
    played = [int(o.split(" played")[0].rsplit(" ", 1)[1]) for o, _ in outs]
    assert sum(played) == 24 and min(played) > 0, outs  # both took part
    q = "select id, status, seats, config, outcome, metrics, n_turns, n_invalid from games order by id"
    assert sqlite3.connect(single).execute(q).fetchall() == sqlite3.connect(shared).execute(q).fetchall()
    qt = "select game_id, idx, role, raw, action, valid from turns order by game_id, idx"
    assert sqlite3.connect(single).execute(qt).fetchall() == sqlite3.connect(shared).execute(qt).fetchall()
    assert sqlite3.connect(shared).execute("select count(*) from claims").fetchone()[0] == 0


#: Opens ``fresh0.db`` ... in the folder argv[1], the i-th at argv[2] + 0.5 i seconds (sleeping
#: until just before, then spinning, so that two processes open each one together).
OPEN_AT = """
import sys, time
from pathlib import Path
from agorabench.store.store import Store
folder, start, rounds = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
for i in range(rounds):
    at = start + 0.5 * i
    time.sleep(max(0.0, at - time.time() - 0.02))
    while time.time() < at:
        pass
    Store(folder / f"fresh{i}.db").dispose()
"""


def test_processes_opening_one_fresh_database_at_the_same_moment_all_succeed(tmp_path):
    """Switching a new SQLite file to WAL does not wait for a lock: two runs started together
    on a new database used to fail about one time in four with "database is locked". Two
    processes open ten new databases, each at the same moment as the other process."""
    import time

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    rounds = 10
    start = f"{time.time() + 1.5:.3f}"  # after both interpreters have imported the store
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT, str(tmp_path), start, str(rounds)], env=env, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    for i in range(rounds):
        assert sqlite3.connect(tmp_path / f"fresh{i}.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_live_claim_is_left_alone_and_a_crashed_one_expires(tmp_path, write_study, capsys):
    path, db = write_study(SCRIPTED), tmp_path / "claims.db"
    from agorabench.core.study import load_study

    specs = load_study(path).expand()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    host = socket.gethostname()
    store = Store(db)
    assert store.claim(specs[0].id, "scripted", "elsewhere:1:a")  # another machine, heartbeat fresh
    assert store.claim(specs[1].id, "scripted", "elsewhere:2:b")  # another machine, heartbeat stale
    assert store.claim(specs[2].id, "scripted", f"{host}:{dead}:c")  # this machine, killed process
    assert store.claim(specs[3].id, "scripted", f"{host}:{os.getpid()}:d")  # this machine, alive
    assert not store.claim(specs[0].id, "scripted", "me")
    with store.engine.begin() as conn:
        conn.execute(sa.text("update claims set heartbeat = heartbeat - 10000 where owner = 'elsewhere:2:b'"))
    store.dispose()
    rc, out, _ = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0 and "22 played" in out and "2 being played by another process" in out, out
    done = {r[0] for r in sqlite3.connect(db).execute("select id from games where status = 'done'")}
    assert {specs[1].id, specs[2].id} <= done and not {specs[0].id, specs[3].id} & done


def test_claims_work_the_same_on_postgresql(postgres):
    postgres_url = postgres.new_database()  # the session's real server (tests/conftest.py)
    host = socket.gethostname()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    store = Store(postgres_url)
    assert store.claim("g1", "s", "elsewhere:1:a") and not store.claim("g1", "s", "me")
    assert store.claim("g2", "s", f"{host}:{dead}:b") and store.claim("g2", "s", "me")  # dead owner
    assert store.claim("g3", "s", "elsewhere:3:c")
    with store.engine.begin() as conn:
        conn.execute(sa.text("update claims set heartbeat = heartbeat - 10000 where game_id = 'g3'"))
    assert store.claim("g3", "s", "me")  # stale heartbeat
    store.release_many(["g2"], "me")
    assert store.claim("g2", "s", "other")
    _check_batch_claims(store, host, dead)
    store.dispose()


def _check_batch_claims(store: Store, host: str, dead: str) -> None:
    """claim_many: free games in one go, a live holder's game left alone, a dead owner's taken
    over, one's own kept; done_among names the finished ones."""
    assert store.claim("b1", "s", "elsewhere:9:z")  # live, on another machine
    assert store.claim("b2", "s", f"{host}:{dead}:y")  # a killed process of this machine
    assert store.claim("b3", "s", "mine")
    assert store.claim_many(["b0", "b1", "b2", "b3", "b4"], "s", "mine") == {"b0", "b2", "b3", "b4"}
    assert store.claim_many(["b0", "b1"], "s", "another") == set()
    store.release_many(["b0", "b1"], "mine")  # only one's own claims are dropped
    assert store.claim_many(["b0", "b1"], "s", "another") == {"b0"}
    assert store.done_among(["b0", "nothing"]) == set()


def test_batch_claims_on_sqlite(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    store = Store(tmp_path / "c.db")
    _check_batch_claims(store, socket.gethostname(), dead)
    store.dispose()


# 7. dead backends ------------------------------------------------------------------------------

def test_the_probe_names_each_kind_of_dead_backend_in_one_line(tmp_path, write_study, fake_openai, capsys):
    refused = f"http://127.0.0.1:{free_port()}/v1"
    one_line_error(*agora(capsys, "run", str(envy(write_study, refused, file="a.toml")), "--db", str(tmp_path / "a.db"))[::2], "connection refused")
    url, _ = fake_openai("--models", "fake,other")
    rc, out, err = agora(capsys, "run", str(envy(write_study, url, file="ok.toml")), "--db", str(tmp_path / "ok.db"), "--quiet")
    assert rc == 0 and "4 played" in out, out + err  # a listed name passes
    one_line_error(*agora(capsys, "run", str(envy(write_study, url, model="gpt-nonexistent", file="b.toml")), "--db", str(tmp_path / "b.db"))[::2], "wrong model name", "gpt-nonexistent")
    silent, stats = fake_openai("--never-answer")
    one_line_error(*agora(capsys, "run", str(envy(write_study, silent, timeout=1, file="c.toml")), "--db", str(tmp_path / "c.db"))[::2], "no answer")
    for db in ("a.db", "b.db", "c.db"):  # nothing was played
        assert sqlite3.connect(tmp_path / db).execute("select count(*) from games").fetchone()[0] == 0


def test_a_refused_connection_is_not_called_a_timeout(tmp_path, write_study, capsys):
    refused = f"http://127.0.0.1:{free_port()}/v1"
    path, db = envy(write_study, refused, attempts=1), tmp_path / "r.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe")
    assert rc == 1 and "2 errors" in out
    errors = [e for (e,) in sqlite3.connect(db).execute("select error from games where status = 'error'")]
    assert errors and all("connection refused" in e and "timeout" not in e.lower() for e in errors), errors


@pytest.mark.parametrize("fault", ["--html-first", "--truncate-first"])
def test_an_html_page_or_a_cut_body_is_retried_as_transient(fault, tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai(fault, "2")
    path, db = envy(write_study, url, attempts=5), tmp_path / "h.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "1")
    assert rc == 0 and "4 played, 0 errors" in out, out + err
    assert server_requests(stats) == 6 + 2  # every answer, plus the two retried pages


# 8. a study file and its database drift apart ------------------------------------------------------

def test_reports_and_exports_cover_the_current_design_unless_all(played, tmp_path, capsys):
    path, db = played
    path.write_text(path.read_text().replace('matrix = ["M1", "M2", "M3"]', 'matrix = ["M1", "M2"]'))
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "now.csv"))
    assert rc == 0 and "wrote 16 rows" in out and "left out 8 stored game(s)" in err, out + err
    assert {r["matrix"] for r in csv.DictReader(open(tmp_path / "now.csv"))} == {"M1", "M2"}
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "all.csv"), "--all")
    assert rc == 0 and "wrote 24 rows" in out and "left out" not in err
    rc, out, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0 and "left out 8" in err
    assert "8 stored game(s) not in the study file" in (tmp_path / "rep" / "index.html").read_text()


# 9. reading one game ---------------------------------------------------------------------------

def test_show_prints_a_game_per_role_with_replies_reasks_and_errors(tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai("--garbage")
    path, db = envy(write_study, url), tmp_path / "show.db"
    assert agora(capsys, "run", str(path), "--db", str(db), "--quiet")[0] == 0
    rc, out, err = agora(capsys, "show", str(path), "--db", str(db), "--first-invalid")
    assert rc == 0, err
    assert "=== focal (remote) ===" in out and "INVALID" in out and "[re-ask]" in out and "parse error:" in out
    assert out.count("rather not pick") >= 3  # the first replies of the re-asked turns are shown too
    game_id = out.split()[1]
    rc, out, _ = agora(capsys, "show", str(path), game_id[:10], "--db", str(db), "--model", "b")
    assert rc == 0 and f"game {game_id}" in out and "=== focal" not in out
    one_line_error(*agora(capsys, "show", str(path), "ffffffffff", "--db", str(db))[::2], "no game")
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("agora ")


def test_show_of_a_scripted_game_lists_actions_and_metrics(played, capsys):
    path, db = played
    game_id = sqlite3.connect(db).execute("select id from games order by id limit 1").fetchone()[0]
    rc, out, _ = agora(capsys, "show", str(path), game_id, "--db", str(db))
    assert rc == 0 and "-> action" in out and "metrics" in out and "[system]" in out


# 10. simultaneous moves are stored in seat order ---------------------------------------------------

class _Pick(Action):
    n: int


class _Slow:
    def __init__(self, delay: float, n: int) -> None:
        self.delay, self.n = delay, n

    async def act(self, request) -> Reply:
        await asyncio.sleep(self.delay)
        action = _Pick(n=self.n)
        return Reply(text=action.render(), action=action)


def test_simultaneous_moves_are_recorded_in_seat_order_not_arrival_order():
    table = Table({"a": _Slow(0.06, 1), "b": _Slow(0.0, 2), "c": _Slow(0.03, 3)}, seed=1)
    prompt = Prompt("pick", phase="harvest")
    asyncio.run(table.ask_each({r: (prompt, _Pick, None) for r in ("c", "a", "b")}))
    assert [(t.index, t.role, t.action["n"]) for t in table.turns] == [(0, "a", 1), (1, "b", 2), (2, "c", 3)]
    table.note_metrics("b", {"x": 1.0})
    assert table.turns[1].metrics == {"x": 1.0}


def test_a_reused_pid_does_not_keep_a_dead_owners_claims():
    """A claim names its process by pid and start time: a later process with the same pid (as
    after a restart in a fresh PID namespace) is not the owner."""
    from agorabench.store.store import _owner_gone, claim_owner

    host = socket.gethostname()
    assert not _owner_gone(claim_owner())  # this very process
    assert _owner_gone(f"{host}:{os.getpid()}:1:x")  # same pid, started at another time
    assert not _owner_gone(f"{host}:{os.getpid()}:d")  # no start time: the pid alone decides
    assert not _owner_gone(f"elsewhere:{os.getpid()}:1:x")  # another machine: only the heartbeat can tell
