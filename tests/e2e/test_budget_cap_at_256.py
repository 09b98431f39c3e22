"""Issue 42 item 2: ``--budget`` and ``--budget-tokens`` are caps at any concurrency. Small commons
games (2 agents, 2 months) against the loopback OpenAI-compatible provider whose model keeps the
lake (tests/support/providers.py ``--cautious``; its tokens are whitespace words), 300 of them at
``--concurrency 256``, every game estimated at nothing so that only the per-call gate can hold
the cap: the spend stays within the budget plus what the calls in flight may use beyond what they
are held at, and the end line says "spent X of Y". The gate holds each call at the dearest rates
it may be billed at (a prompt-cache write, a flex call made again at standard)."""

from __future__ import annotations

import sqlite3

import pytest

from agorabench.core import plan as plan_module
from agorabench.core.spending import call_estimate
from agorabench.core.study import ModelEntry
from agorabench.models.base import GenerationSettings
from agorabench.models.model import Model, Pricing
from support.budget import KEY_ENV, cautious, game_outcomes, remote, stopped_by_budget  # noqa: F401  (cautious: fixture)
from support.helpers import agora
from support.studies import commons

CONCURRENCY = 256
MAX_TOKENS = 100
PRICE_INPUT, PRICE_OUTPUT = 1.0, 2.0


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-loopback")
    # every game estimated at nothing: each game's start lets it in, only the calls' gate holds
    monkeypatch.setattr(plan_module.Plan, "game_estimate", lambda self, spec: (0.0, 0.0))


def small_commons(url: str, name: str) -> str:
    entry = remote(url, max_tokens=MAX_TOKENS, price_input=PRICE_INPUT, price_output=PRICE_OUTPUT, max_concurrency=CONCURRENCY)
    fixed = {"scenario": "fishery", "n_agents": 2, "months": 2, "max_conversation_steps": 2, "memory": "transcript"}
    return commons(name, fixed=fixed, models=[entry], repeats=300, seed=42, max_retries=2)


def spent_in(db) -> tuple[float, int, dict[str, int], list[str]]:
    with sqlite3.connect(db) as con:
        cost, tokens = con.execute("select sum(cost), sum(prompt_tokens + completion_tokens) from turns where not cached").fetchone()
    return (cost or 0.0, tokens or 0, *game_outcomes(db))


def test_a_money_budget_is_a_cap_at_concurrency_256(cautious, tmp_path, write_study, capsys):
    path, db = write_study(small_commons(cautious, "cap_money")), tmp_path / "m.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--no-cache", "--concurrency", str(CONCURRENCY), "--budget", "0.50")
    assert rc == 0, out + err  # games the budget stopped are not failures of the study
    cost, _, statuses, errors = spent_in(db)
    # at most what the calls in flight may use beyond what they are held at (their output bound)
    slack = CONCURRENCY * MAX_TOKENS * PRICE_OUTPUT / 1e6
    assert 0.40 < cost <= 0.50 + slack, cost
    assert statuses.get("error", 0) >= 1 and all(e.startswith("budget reached: ") and "would pass the budget of $0.50" in e for e in errors)
    assert all("response cache" not in e for e in errors)  # --no-cache: nothing is replayed from it
    line = next(x for x in out.splitlines() if x.startswith("budget reached: "))
    assert f"spent ${cost:.4f} of $0.50" in line and "from the response cache" not in line, line
    assert stopped_by_budget(out) == statuses["error"]


def test_a_token_budget_is_a_cap_at_concurrency_256(cautious, tmp_path, write_study, capsys):
    path, db = write_study(small_commons(cautious, "cap_tokens")), tmp_path / "t.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--concurrency", str(CONCURRENCY), "--budget-tokens", "150000")
    assert rc == 0, out + err
    _, tokens, statuses, errors = spent_in(db)
    assert 120_000 < tokens <= 150_000 + CONCURRENCY * MAX_TOKENS, tokens
    assert statuses.get("error", 0) >= 1 and all(e.startswith("budget reached: ") and "would pass the budget of 150,000 tokens" in e for e in errors)
    line = next(x for x in out.splitlines() if x.startswith("budget reached: "))
    assert f"spent {tokens:,} tokens of 150,000 tokens" in line, line


class _Backend:
    identity, base_url, serialized = "loopback", "http://127.0.0.1:9/v1", False


def test_a_call_is_held_at_the_dearest_rates_it_may_be_billed_at():
    messages = [{"role": "user", "content": "x" * 4000}]  # 1,000 input tokens at characters / 4
    settings = GenerationSettings(max_tokens=500)
    plain = ModelEntry(name="a", spec="openai/gpt-4o-mini", price_input=1.0, price_output=2.0)
    cost, tokens = call_estimate(Model(_Backend(), pricing=Pricing.for_entry(plain)), plain, messages, settings)
    assert tokens == 1500 and cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    # Anthropic writes a prompt into its cache at 2 × the input price with a one-hour TTL
    claude = ModelEntry(name="c", spec="anthropic/claude-sonnet-4-5", price_input=3.0, price_output=15.0, cache_ttl="1h")
    cost, _ = call_estimate(Model(_Backend(), pricing=Pricing.for_entry(claude)), claude, messages, settings)
    assert cost == pytest.approx((1000 * 3.0 * 2 + 500 * 15.0) / 1e6)
    # a flex call that may be made again at the standard tier is held at the standard price
    flex = ModelEntry(name="f", spec="openai/gpt-5-mini", price_input=1.0, price_output=2.0, service_tier="flex", service_tier_fallback=True)
    cost, _ = call_estimate(Model(_Backend(), pricing=Pricing.for_entry(flex)), flex, messages, settings)
    assert cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    fixed = ModelEntry(name="g", spec="openai/gpt-5-mini", price_input=1.0, price_output=2.0, service_tier="flex")
    cost, _ = call_estimate(Model(_Backend(), pricing=Pricing.for_entry(fixed)), fixed, messages, settings)
    assert cost == pytest.approx((1000 * 0.5 + 500 * 1.0) / 1e6)  # flex only: OpenAI bills it at the batch price
