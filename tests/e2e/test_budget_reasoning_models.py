"""Issue 40, item 8: ``--budget`` with a reasoning model. The bound of a call counts the whole
reasoning budget (16,256 output tokens by default), so at first only a few games fit; once games
have finished, each next one is estimated at what they spent, and the budget plays every game it
can pay for. With an assumed output per call that is too low, the calls' own check (their
worst case at the bound) still keeps the spend within the budget. Against the loopback OpenAI
server, which thinks for 600 tokens at the default effort."""

from __future__ import annotations

import re
import sqlite3

import pytest

from support.helpers import agora
from support.providers import provider_server
from support.studies import envy_points, model, paper_grid, scripted


@pytest.fixture(scope="module")
def server():
    with provider_server("openai") as url:
        yield url


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("LOOPBACK_KEY", "sk-loopback")


def study(url: str) -> str:
    """o3 against always-B on 12 situations, both seatings: 24 games, 12 of them with 3 calls."""
    thinker = model("thinker", f"openai/o3@{url}", api_key_env="LOOPBACK_KEY", price_input=2.0, price_output=8.0)
    return envy_points("thinking", [thinker, scripted("b", "always-b")], grid=paper_grid(margin=["marginal"], peer_move=["A", "D"]), seed=3)


def spent(db) -> float:
    with sqlite3.connect(db) as con:
        return con.execute("select coalesce(sum(cost), 0) from turns").fetchone()[0]


def test_after_the_first_games_the_budget_counts_what_games_spend_not_the_bound(server, tmp_path, write_study, capsys):
    path, db = write_study(study(server)), tmp_path / "r.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--concurrency", "4", "--budget", "1.00")
    assert rc == 0, out + err
    # a game at the bound is 3 x 16,256 output tokens at $8 per million (about $0.39): without the
    # re-estimate only two games would ever have started
    assert "24 played, 0 errors" in out and "budget reached" not in out, out
    assert 0 < spent(db) <= 1.00


def test_an_assumed_output_too_low_never_takes_the_spend_past_the_budget(server, tmp_path, write_study, capsys):
    path, db = write_study(study(server)), tmp_path / "low.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--concurrency", "4", "--budget", "0.05", "--output-tokens", "100")
    assert rc == 0, out + err
    assert 0 < spent(db) <= 0.05, spent(db)
    assert "budget reached" in out and int(re.search(r"(\d+) game\(s\) left to play", out).group(1)) > 0, out


def test_the_plan_says_the_worst_case_when_the_output_is_assumed(server, tmp_path, write_study, capsys):
    path = write_study(study(server))
    rc, out, err = agora(capsys, "plan", str(path), "--db", str(tmp_path / "none.db"), "--output-tokens", "100")
    assert rc == 0, err
    assumed = float(re.search(r"^  total .* \$([\d.,]+)$", out, re.M).group(1))
    worst = float(re.search(r"^worst case: \$([\d.,]+) with every call at its output bound", out, re.M).group(1).replace(",", ""))
    # 36 calls at 16,256 output tokens (256 + the default reasoning budget of 16,000) at $8 per million
    assert worst - assumed == pytest.approx(36 * (16_256 - 100) * 8 / 1e6, abs=1e-3)


def test_a_reasoning_model_without_a_timeout_waits_by_its_output_limit():
    from agorabench.core.seating import REASONING_TOKENS_PER_SECOND, default_timeout
    from agorabench.core.study import ModelEntry

    assert default_timeout(ModelEntry(name="o", spec="openai/o3")) == pytest.approx(120 + 16_256 / REASONING_TOKENS_PER_SECOND)
    assert default_timeout(ModelEntry(name="o", spec="openai/o3", reasoning_budget=2_000)) == pytest.approx(120 + 2_256 / REASONING_TOKENS_PER_SECOND)
    assert default_timeout(ModelEntry(name="o", spec="openai/o3", timeout=30)) == 30  # set: kept
    assert default_timeout(ModelEntry(name="g", spec="openai/gpt-4o-mini")) == 120  # no reasoning: the default
