"""Issue 39 §0: the plan and the budget hold for a game whose length depends on play. A GovSim
fishery (5 agents, 12 months, the memory stream) against a loopback provider whose model keeps
the lake (tests/support/providers.py ``--cautious``; its tokens are whitespace words): the plan
(whose random stand-ins once emptied the lake in month 1 and planned 9 calls for 474) is within a
quarter of the run's calls and cost, and a budget holds within the calls in flight even when the
estimate of a game is far too low."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from agorabench.core import plan as plan_module
from agorabench.core.plan import plan_study
from agorabench.core.study import load_study
from support.budget import KEY_ENV, cautious, game_outcomes, remote, stopped_by_budget  # noqa: F401  (cautious: fixture)
from support.helpers import agora
from support.providers import server_stats
from support.studies import commons


def words(text: str) -> int:
    """The loopback server's token measure."""
    return len(text.split())


def chat_requests(base_url: str) -> int:
    return server_stats(base_url)["requests"]


def fishery(url: str, name: str = "fish", repeats: int = 1, price_output: float = 0.0) -> str:
    entry = remote(url, max_tokens=100, price_input=1.0, price_output=price_output)
    fixed = {"scenario": "fishery", "n_agents": 5, "months": 12, "max_conversation_steps": 10, "memory": "retrieved", "embeddings": "minilm"}
    return commons(name, fixed=fixed, models=[entry], repeats=repeats, seed=42, max_retries=2)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-loopback")


def test_the_commons_plan_is_within_a_quarter_of_a_loopback_run(cautious, tmp_path, write_study, capsys):
    path = write_study(fishery(cautious))
    plan, _ = plan_study(load_study(path), None, count_tokens=words)
    assert "'sustainable'" in plan.basis and "full length" in plan.basis
    before = chat_requests(cautious)
    db = tmp_path / "f.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-cache", "--no-probe")
    assert rc == 0, out + err
    calls = chat_requests(cautious) - before
    with sqlite3.connect(db) as con:
        (outcome,) = con.execute("select outcome from games").fetchone()
        cost, prompt = con.execute("select sum(cost), sum(prompt_tokens) from turns").fetchone()
    assert len(json.loads(outcome)["months"]) == 12  # the model kept the lake: a game of full length
    assert calls > 300
    assert abs(plan.calls - calls) <= 0.25 * calls, (plan.calls, calls)
    # priced at $1 per million input tokens and nothing for output: the cost is the input read
    assert cost == pytest.approx(prompt / 1e6)
    assert abs(plan.cost - cost) <= 0.25 * cost, (plan.cost, cost)


def test_a_budget_holds_within_the_calls_in_flight_when_the_estimate_is_far_too_low(cautious, tmp_path, write_study, capsys, monkeypatch):
    path, db = write_study(fishery(cautious, name="capped", repeats=4, price_output=2.0)), tmp_path / "c.db"
    # every game estimated at nothing: the start of each game lets it in, only the calls' check can hold the budget
    monkeypatch.setattr(plan_module.Plan, "game_estimate", lambda self, spec: (0.0, 0.0))
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--concurrency", "4", "--budget", "0.2")
    assert rc == 0, out + err  # games the budget stopped are not failures of the study
    with sqlite3.connect(db) as con:
        spent = con.execute("select sum(cost) from turns").fetchone()[0]
    statuses, errors = game_outcomes(db)
    assert 0.1 < spent <= 0.2, spent
    stopped = stopped_by_budget(out)
    assert stopped == statuses["error"] >= 1 and all(e.startswith("budget reached: ") and "would pass the budget of $0.20" in e for e in errors)
    line = next(x for x in out.splitlines() if x.startswith("budget reached: "))
    assert f"spent ${spent:.4f} of $0.20" in line and f"{stopped} game(s) in flight stopped at a call that could have passed it" in line
    # a higher budget plays the rest; the stopped games' answers so far come from the response cache
    monkeypatch.undo()
    monkeypatch.setenv(KEY_ENV, "sk-loopback")
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--budget", "5")
    assert rc == 0 and "0 errors" in out, out + err
    assert int(re.search(r"(\d+) cache hits", out).group(1)) > 0
    # a budget below what the study has already spent: said, and the exit status is not 0
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--budget", "0.05")
    assert rc == 1 and "budget exceeded: spent $" in err and "the study had spent more than the budget before this run" in err, out + err


def test_finished_games_re_estimate_the_next_of_their_kind(cautious, tmp_path, write_study):
    study = load_study(write_study(fishery(cautious, repeats=2, price_output=2.0)))
    plan, _ = plan_study(study, None, count_tokens=words)
    first, second = list(study.iter_specs())
    planned = plan.game_estimate(second)
    assert planned[0] > 0
    plan.observe(first, 0.01, 1000)
    assert plan.game_estimate(second) == (0.01, 1000)
    plan.observe(first, 0.03, 3000)
    assert plan.game_estimate(second) == pytest.approx((0.02, 2000))
