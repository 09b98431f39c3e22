"""The OpenAI-compatible path against a real HTTP server on 127.0.0.1 (our fault-injecting
one): retries, rate limits with Retry-After, timeouts, failures recorded as data, resume after a
kill, and replay from the cache at different concurrency."""

import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest

from support.helpers import ROOT, agora, free_port, server_requests
from support.studies import envy_points, model, paper_grid, scripted


def study(write_study, url, moves=("A", "B", "C", "D"), timeout=30, attempts=5, name="study.toml", **settings):
    """The paper's grid (peer moves ``moves``) with the hosted model at ``url`` against always-B
    (``settings``: the study's own, e.g. ``stop_after_invalid``)."""
    remote = model("remote", "openai/fake", base_url=url, timeout=timeout, max_attempts=attempts, price_input=1.0, price_output=2.0)
    return write_study(envy_points("hosted", [remote, scripted("b", "always-b")], grid=paper_grid(peer_move=list(moves)), **settings), name=name)


def games_table(db):
    df = pd.read_sql("select id, status, seats, config, outcome, metrics, n_invalid from games order by id", sqlite3.connect(db))
    return df


def test_rate_limits_are_retried_after_the_servers_wait(tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai("--rate-limit", "3")
    # every 3rd request the server sees is refused; with several calls in flight one call can
    # meet the refusal on consecutive attempts (about (1/3)^k for k attempts), so allow 12
    path = study(write_study, url, moves=["B"], attempts=12)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "r.db"), "--quiet")
    assert rc == 0, err
    assert "24 played, 0 errors" in out  # 12 configurations x 2 seatings
    # remote plays focal in 12 games x 3 turns = 36 answers; every 3rd request was refused
    assert server_requests(stats) >= 36 + 36 // 2 - 1
    con = sqlite3.connect(tmp_path / "r.db")
    assert con.execute("select count(*) from turns where valid").fetchone()[0] == 72
    assert con.execute("select sum(cost) from turns").fetchone()[0] > 0  # priced tokens are accounted


def test_timeouts_and_transient_errors_are_retried(tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai("--hang-first", "2", "--fail-first", "0")
    path = study(write_study, url, moves=["B"], timeout=1)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "t.db"), "--quiet", "--concurrency", "1")
    assert rc == 0 and "0 errors" in out, out + err
    url, _ = fake_openai("--fail-first", "3")
    path = study(write_study, url, moves=["B"], name="s2.toml")
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "f.db"), "--quiet")
    assert rc == 0 and "0 errors" in out, out + err


def test_a_dead_backend_aborts_only_its_games_and_they_run_again_later(tmp_path, write_study, fake_openai, capsys):
    port = free_port()
    bad, _ = fake_openai("--always-fail", port=port)
    db = tmp_path / "d.db"
    path = study(write_study, bad, moves=["B"], attempts=2)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 1
    assert "12 played, 12 errors" in out  # scripted focal games finished; remote focal aborted
    assert "HTTP 500" in err and "Traceback" not in err
    con = sqlite3.connect(db)
    errors = con.execute("select error from games where status = 'error'").fetchall()
    assert len(errors) == 12 and all("injected failure" in e[0] for e in errors)
    done = dict(con.execute("select id, finished from games where status = 'done'").fetchall())
    # the backend comes back on the same address: only the aborted games are played
    fake_openai.stop_all()
    fake_openai(port=port)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0 and "24 games, 12 already done, 12 played, 0 errors" in out, out
    after = dict(sqlite3.connect(db).execute("select id, finished from games where status = 'done'").fetchall())
    assert len(after) == 24 and all(after[k] == v for k, v in done.items())


def test_garbage_answers_are_reasked_then_marked_invalid(tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai("--garbage")
    path = study(write_study, url, moves=["B"], stop_after_invalid=0)  # 36 invalid turns in a row: the model is not stopped
    db = tmp_path / "g.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0
    con = sqlite3.connect(db)
    rows = con.execute("select t.valid, t.retries, t.error, t.raw from turns t join games g on g.id = t.game_id where g.seats like '%\"focal\": \"remote\"%'").fetchall()
    assert len(rows) == 36 and not any(r[0] for r in rows)
    assert all(r[1] == 2 and "expected format" in r[2] and "rather not" in r[3] for r in rows)
    assert server_requests(stats) == 36 * 3
    nans = con.execute("select count(*) from games where json_extract(metrics, '$.t1') is null").fetchone()[0]
    assert nans == 12


def test_killed_study_resumes_without_replaying_finished_games(tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai("--latency", "0.05")
    path = study(write_study, url)
    db = tmp_path / "k.db"
    proc = subprocess.Popen([sys.executable, "-m", "agorabench", "run", str(path), "--db", str(db), "--concurrency", "2", "--quiet"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    done_before = 0
    while time.time() < deadline:
        time.sleep(0.3)
        try:
            done_before = sqlite3.connect(db).execute("select count(*) from games where status='done'").fetchone()[0]
        except sqlite3.Error:
            continue
        if done_before >= 10:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    con = sqlite3.connect(db)
    finished_before = dict(con.execute("select id, finished from games where status='done'").fetchall())
    assert 10 <= len(finished_before) < 96
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    assert f"96 games, {len(finished_before)} already done, {96 - len(finished_before)} played" in out
    after = dict(sqlite3.connect(db).execute("select id, finished from games where status='done'").fetchall())
    assert len(after) == 96
    assert all(after[g] == t for g, t in finished_before.items())  # nothing finished was replayed


def test_replay_from_cache_is_identical_at_concurrency_1_and_32(tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai("--latency", "0.01")
    path = study(write_study, url)
    first = tmp_path / "first.db"
    assert agora(capsys, "run", str(path), "--db", str(first), "--concurrency", "1", "--quiet")[0] == 0
    calls = server_requests(stats)
    second = tmp_path / "second.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(second), "--cache", str(first), "--concurrency", "32", "--quiet")
    assert rc == 0 and " 0 model calls" in out, out
    assert server_requests(stats) == calls
    a, b = games_table(first), games_table(second)
    assert len(a) == 96 and a.equals(b)


@pytest.mark.parametrize("value", ["nan", "-5", "1e308", "inf", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_retry_after_that_is_no_sensible_number_falls_back_to_backoff(value, tmp_path, write_study, fake_openai, capsys):
    """``Retry-After: nan`` (or negative, absurd, a date) once made every game fail: such a value
    is ignored and the call backs off as if the server had said nothing."""
    url, stats = fake_openai("--rate-limit", "3", "--retry-after", value)
    path = study(write_study, url, moves=["B"], attempts=12)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "r.db"), "--quiet")
    assert rc == 0 and "24 played, 0 errors" in out, out + err
    assert server_requests(stats) >= 36 + 36 // 2 - 1  # the refusals happened and were retried


def test_retry_after_values_are_taken_only_when_finite_and_sensible():
    from agorabench.models.openai_compat import MAX_RETRY_AFTER, _retry_after_headers

    assert _retry_after_headers({"Retry-After": "2.5"}) == 2.5
    assert _retry_after_headers({"retry-after-ms": "250"}) == 0.25
    for bad in ("nan", "-1", "inf", "1e308", str(MAX_RETRY_AFTER + 1), "soon", ""):
        assert _retry_after_headers({"Retry-After": bad}) is None, bad


def test_the_probe_asks_each_server_once_and_checks_every_name_against_its_listing(tmp_path, write_study, fake_openai, capsys):
    """10,000 entries on one endpoint once meant 10,000 simultaneous ``GET /models``: the server
    refused them as unreachable. Now one listing per server and key serves every entry."""
    import json
    import urllib.request

    url, stats = fake_openai("--models", ",".join(f"m{i}" for i in range(300)))
    listings = lambda: json.load(urllib.request.urlopen(stats))["listings"]  # noqa: E731
    models = "\n".join(f'[[models]]\nname = "m{i}"\nspec = "openai/m{i}@{url}"' for i in range(300))
    path = write_study(f'name = "many"\ngame = "envy.workplace"\nmatchups = "same_model"\n{models}\n[[models]]\nname = "wrong"\nspec = "openai/nope@{url}"\n')
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "m.db"), "--quiet")
    assert rc == 2 and "model 'wrong': wrong model name: 'nope'" in err, err
    assert "model 'm1'" not in err  # every listed name passed
    assert listings() == 1


def test_a_stalled_endpoint_is_recognised_and_its_games_fail_at_once(tmp_path, write_study, fake_openai, capsys):
    """A server that lists its models but never completes a chat call: after three timed-out
    calls in a row the endpoint counts as stalled and every later call fails at once (it once
    cost each game its full timeouts and retries). The games are stored as failed, with why."""
    url, stats = fake_openai("--stall-chat")
    path = study(write_study, url, moves=["B"], timeout=1)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "s.db"), "--quiet", "--concurrency", "2")
    # the remote model is the focal player in 12 games (and the passive peer in the other 12)
    assert rc == 1 and "12 played, 12 errors" in out, out + err
    rows = sqlite3.connect(tmp_path / "s.db").execute("select status, error from games where status = 'error'").fetchall()
    assert len(rows) == 12
    assert sum("is stalled" in (e or "") for _, e in rows) >= 10, rows[:3]
    assert server_requests(stats) <= 3 + 2  # the three that timed out, and those already in flight
