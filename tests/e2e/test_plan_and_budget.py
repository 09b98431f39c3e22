"""Issue 31, part 2: what a study will cost before it runs (``agora plan``, ``agora run
--dry-run``), a cap on what it may spend (``--budget``, ``--budget-tokens``), a model that answers
nothing valid stopped after ``stop_after_invalid`` invalid turns in a row, and a warning for a
provider's model without prices. Against the real command line, the loopback server
(tests/support/fake_openai.py, whose tokens are whitespace words) and real SQLite."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sqlite3

import pytest

from agorabench.core.plan import plan_study
from agorabench.core.study import load_study
from agorabench.models.providers import PROVIDERS
from support.helpers import agora, one_line_error, server_requests
from support.studies import envy_points, model, paper_grid, scripted, study_toml


def words(text: str) -> int:
    """The loopback server's token measure."""
    return len(text.split())


def envy(url: str, name: str = "planned", **settings) -> str:
    """The hosted model against always-B on 12 situations, both seatings: 24 games, 12 of them
    with the model as the focal player (3 decisions each), 12 as the passive peer (no call)."""
    remote = model("remote", "openai/fake", base_url=url, max_tokens=16, price_input=1.0, price_output=2.0)
    grid = paper_grid(margin=["marginal"], peer_move=["A", "D"])
    return envy_points(name, [remote, scripted("b", "always-b")], grid=grid, seed=3, **settings)


def bargaining(url: str) -> str:
    """GLEE bargaining, the hosted model as Alice against always-reject over 2 rounds, 8
    configurations. The loopback server cannot write a JSON offer, so every answer is invalid;
    with no re-asks (``max_retries = 0``) and two rounds against a player who rejects, each game
    is two calls whatever is answered: the plan's assumptions hold, and its calls must be exact."""
    remote = model("remote", "openai/fake", base_url=url, max_tokens=16)
    return study_toml(
        "planned_glee",
        "glee.bargaining",
        matchups="seats",
        seats=[{"alice": "remote", "bob": "rej"}],
        max_retries=0,
        stop_after_invalid=0,
        grid={"delta_a": [0.8, 0.9], "money": [100, 10000], "messages": [False, True]},
        fixed={"horizon": 2, "delta_b": 0.9},
        models=[remote, scripted("rej", "always-reject")],
    )


def used(db) -> tuple[int, int, int]:
    """(turns with a call, prompt tokens, completion tokens) as the server reported them."""
    with sqlite3.connect(db) as con:
        return con.execute("select count(*), sum(prompt_tokens), sum(completion_tokens) from turns where prompt_tokens > 0").fetchone()


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", ["envy", "bargaining"])
def test_the_plan_matches_the_run_calls_exactly_and_tokens_within_a_quarter(kind, tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai()
    path = write_study(envy(url) if kind == "envy" else bargaining(url))
    plan, spent = plan_study(load_study(path), None, count_tokens=words)
    assert spent == (0.0, 0) and plan.done == 0
    db = tmp_path / "p.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, out + err
    calls, prompt, completion = used(db)
    assert server_requests(stats) == calls == round(plan.calls) == round(plan.models["remote"].calls)
    assert plan.todo == (24 if kind == "envy" else 8) and plan.models["remote"].games == plan.todo
    assert abs(plan.input_tokens - prompt) <= 0.25 * prompt, (plan.input_tokens, prompt)
    assert completion <= plan.output_tokens == calls * 16  # the output is a bound: max_tokens per call
    assert abs(plan.tokens - (prompt + completion)) <= 0.25 * (prompt + completion), (plan.tokens, prompt + completion)
    if kind == "envy":  # priced: $1 / $2 per million tokens, at the bound
        assert plan.cost == pytest.approx((plan.input_tokens + 2 * plan.output_tokens) / 1e6)
    # once played, nothing is left to plan
    again, spent = plan_study(load_study(path), str(db), count_tokens=words)
    assert again.todo == 0 and again.done == plan.todo and again.calls == 0
    assert spent[1] == prompt + completion


def test_plan_and_dry_run_print_each_model_and_the_basis_and_play_nothing(tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai()
    path, db = write_study(envy(url)), tmp_path / "d.db"
    rc, out, err = agora(capsys, "plan", str(path), "--db", str(db))
    assert rc == 0 and err == "", err
    lines = out.splitlines()
    assert lines[0] == "plan for study planned: 24 game(s) to play"
    assert re.match(r"\s+model\s+games\s+calls\s+input tokens\s+output tokens \(at most\)\s+cost$", lines[1]), lines[1]
    assert re.match(r"\s+remote\s+24\s+36\s+[\d,]+\s+576\s+\$0\.\d{4}$", lines[2]), lines[2]
    assert re.match(r"\s+total\s+24\s+36\s", lines[3]) and lines[4].startswith("basis: ") and "characters / 4" in lines[4]
    assert not db.exists()  # read only, never created
    rc, dry, err = agora(capsys, "run", str(path), "--db", str(db), "--dry-run", "--quiet")
    assert rc == 0 and dry == out and not db.exists() and server_requests(stats) == 0
    # half played: the plan and the dry run leave out the done games and leave the database as it was
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--budget-tokens", "4000")
    assert rc == 0 and "budget reached" in out, out + err
    before, requests = digest(db), server_requests(stats)
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--dry-run", "--budget-tokens", "100000", "--output-tokens", "5")
    assert rc == 0 and digest(db) == before and server_requests(stats) == requests
    head = out.splitlines()[0]
    done = int(re.search(r"\((\d+) of 24 already done\)", head).group(1))
    assert 0 < done < 24 and head.startswith(f"plan for study planned: {24 - done} game(s) to play")
    assert "output tokens (assumed)" in out and "5 tokens per call (assumed)" in out
    assert f"budget 100,000 tokens: {24 - done} of the {24 - done} game(s) fit" in out


def test_a_token_budget_stops_starting_games_drains_and_a_higher_one_finishes(tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai("--latency", "0.05")
    path, db = write_study(envy(url)), tmp_path / "b.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "4", "--budget-tokens", "3000")
    assert rc == 0, out + err
    played = int(re.search(r"(\d+) played, 0 errors", out).group(1))
    assert 0 < played < 24
    line = next(x for x in out.splitlines() if x.startswith("budget reached: "))
    assert f"{24 - played} game(s) left to play" in line and "of 3,000 tokens" in line and "run again with a higher budget" in line
    with sqlite3.connect(db) as con:  # the games in flight finished (drained), none was cut short
        assert con.execute("select status, count(*) from games group by status").fetchall() == [("done", played)]
        assert con.execute("select count(*) from claims").fetchone()[0] == 0
    calls, prompt, completion = used(db)
    assert prompt + completion <= 3000 and server_requests(stats) == calls
    spent = prompt + completion
    assert f"spent {spent:,} tokens of 3,000 tokens ({spent:,} tokens in this run)" in line
    # the budget is the study's in this database: the same budget again counts what is stored
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--budget-tokens", "3000")
    assert rc == 0 and f"{played} already done" in out and "budget reached" in out, out + err
    calls, prompt, completion = used(db)
    assert prompt + completion <= 3000 and server_requests(stats) == calls
    played = int(re.search(r"(\d+) already done", out).group(1)) + int(re.search(r"(\d+) played, 0 errors", out).group(1))
    # a higher budget plays the rest
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--budget-tokens", "100000")
    assert rc == 0 and f"24 games, {played} already done, {24 - played} played, 0 errors" in out, out + err
    assert "budget reached" not in out and re.search(r"^budget 100,000 tokens: spent [\d,]+ tokens of 100,000 tokens \([\d,]+ tokens in this run\); not reached$", out, re.M), out


def test_a_money_budget_counts_the_calls_made(tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai()
    path, db = write_study(envy(url)), tmp_path / "m.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "1", "--budget", "0.003")
    assert rc == 0, out + err
    with sqlite3.connect(db) as con:
        cost = con.execute("select sum(cost) from turns").fetchone()[0]
    assert 0 < cost <= 0.003
    assert f"budget reached: spent ${cost:.4f} of $0.003 (${cost:.4f} in this run)" in out
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--budget", "1")
    assert rc == 0 and "0 errors" in out and "budget $1.00: spent $0.0" in out


def test_budget_options_are_checked(tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai()
    path = write_study(envy(url))
    for bad in (["--budget", "-1"], ["--budget", "nan"], ["--budget-tokens", "many"]):
        with pytest.raises(SystemExit) as exc:
            agora(capsys, "run", str(path), *bad)
        assert exc.value.code == 2
    capsys.readouterr()
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "r.db"), "--budget", "1", "--executor", "ray")
    one_line_error(rc, err, "async executor")


def test_a_model_answering_nothing_valid_stops_after_invalid_turns_in_a_row(tmp_path, write_study, fake_openai, capsys):
    url, stats = fake_openai("--garbage")
    path, db = write_study(envy(url, stop_after_invalid=2)), tmp_path / "g.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "1")
    assert rc == 1 and "12 played, 12 errors" in out, out + err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("  model 'remote' stopped: 2 turns in a row were invalid (the last: "), err
    assert "played again by the next run" in lines[0] and "stop_after_invalid" in lines[0]
    assert server_requests(stats) == 2 * 3  # two decisions, each asked three times (two re-asks); then no call
    with sqlite3.connect(db) as con:
        errors = [e for (e,) in con.execute("select error from games where status = 'error'")]
        assert len(errors) == 12 and all("turns in a row were invalid" in e for e in errors)
    # the errors are played again by the next run, which asks the model again (the invalid answers
    # that stopped it left the response cache) and, the server still answering nothing valid, stops again
    assert "asks the model again" in lines[0]
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "1")
    assert rc == 1 and "12 already done, 0 played, 12 errors; 6 model calls, 0 cache hits" in out and server_requests(stats) == 2 * 2 * 3


def test_zero_never_stops_a_model(tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai("--garbage")
    path, db = write_study(envy(url, stop_after_invalid=0, max_retries=0)), tmp_path / "z.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0 and "24 played, 0 errors" in out and "stopped" not in err, out + err


def test_a_providers_model_without_prices_is_warned_about_before_the_run(tmp_path, write_study, fake_openai, capsys, monkeypatch):
    url, _ = fake_openai()
    # a provider's own API (no base_url) served here by the loopback server
    monkeypatch.setitem(PROVIDERS, "together", dataclasses.replace(PROVIDERS["together"], base_url=url))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    hosted = model("hosted", "together/some-model", max_tokens=16)
    grid = paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=["A"])
    path = write_study(envy_points("unpriced", [hosted, scripted("b", "always-b")], grid=grid))
    warning = "agora: warning: model 'hosted' has no prices: cost shown as $0"
    rc, out, err = agora(capsys, "plan", str(path), "--db", str(tmp_path / "u.db"))
    assert rc == 0 and err.startswith(warning) and len(err.splitlines()) == 1, err
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "u.db"), "--quiet", "--no-probe")
    assert rc == 0 and "2 played, 0 errors" in out, out + err
    assert err.startswith(warning) and len(err.splitlines()) == 1, err
    # priced, or at a server of one's own (a base_url), it is not
    priced = model("hosted", "together/some-model", max_tokens=16, price_input=0.5, price_output=1.5)
    own = model("own", "vllm/some-model", base_url=url, max_tokens=16)
    for entry in (priced, own):
        path = write_study(envy_points("unpriced", [entry, scripted("b", "always-b")], grid=grid), name="other.toml")
        rc, out, err = agora(capsys, "plan", str(path), "--db", str(tmp_path / "x.db"))
        assert rc == 0 and err == "", err
