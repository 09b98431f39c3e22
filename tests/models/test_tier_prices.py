"""Prices by tier and time of day (models/pricing.py): a call is billed at the tier its provider
says served it (a batch result's ``batch``), standard calls within the off-peak hours at the
off-peak price (by the UTC time, the clock injected), prompt tokens read from the cache at
``price_cached_input`` and written to it at the cache-write multiple; ``tier_prices`` is checked
where a study file is read; a turn's cost is the figure the model's books hold."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import ClassVar, Literal

import pytest
from pydantic import ValidationError

from agorabench.core.actions import Action
from agorabench.core.agents import LLMAgent
from agorabench.core.study import ModelEntry, StudyError, load_study
from agorabench.core.table import Prompt, Table
from agorabench.models.base import Completion, GenerationSettings
from agorabench.models.model import Model, Pricing
from agorabench.models.pricing import billed_tier, check_tier_prices, parse_hours, within
from support.studies import model, study_toml


def utc(hh: int, mm: int = 0) -> float:
    return datetime(2025, 6, 2, hh, mm, tzinfo=timezone.utc).timestamp()


def reply(prompt: int = 1_000_000, output: int = 1_000_000, cached: int = 0, tier: str | None = None, written: int = 0) -> Completion:
    extra = {}
    if tier is not None:
        extra["service_tier"] = tier
    if written:
        extra["cache_write_tokens"] = written
    return Completion("ok", prompt_tokens=prompt, completion_tokens=output, cached_tokens=cached, extra=extra)


# tiers ----------------------------------------------------------------------------------------


def test_batch_is_half_of_every_standard_price():
    p = Pricing(2.0, 8.0, 0.5)
    assert p.price(reply()) == (pytest.approx(10.0), "standard")
    assert p.price(reply(tier="batch")) == (pytest.approx(5.0), "batch")
    assert p.price(reply(cached=400_000, tier="batch"))[0] == pytest.approx((600_000 * 1.0 + 400_000 * 0.25 + 1e6 * 4.0) / 1e6)
    given = Pricing(2.0, 8.0, tiers=check_tier_prices({"batch": {"input": 0.9}}))
    assert given.price(reply(tier="batch"))[0] == pytest.approx(0.9 + 4.0)  # the output keeps the default half


def test_flex_is_the_batch_price_on_openai_and_gemini_only():
    for provider in ("openai", "gemini"):
        assert Pricing(2.0, 8.0, provider=provider).price(reply(tier="flex")) == (pytest.approx(5.0), "flex")
    assert Pricing(2.0, 8.0, provider="openai", tiers={"batch": {"input": 1.2, "output": 4.8}}).price(reply(tier="flex"))[0] == pytest.approx(6.0)
    assert Pricing(2.0, 8.0, provider="deepseek").price(reply(tier="flex"))[0] == pytest.approx(10.0)
    assert Pricing(2.0, 8.0, provider="openai", tiers={"flex": {"input": 0.7, "output": 2.1}}).price(reply(tier="flex"))[0] == pytest.approx(2.8)


def test_priority_is_standard_unless_priced_and_reports_map_to_tiers():
    assert Pricing(2.0, 8.0).price(reply(tier="priority")) == (pytest.approx(10.0), "priority")
    assert Pricing(2.0, 8.0, tiers={"priority": {"input": 3.5, "output": 14}}).price(reply(tier="priority"))[0] == pytest.approx(17.5)
    assert [billed_tier(t) for t in ("default", "standard", "auto", "scale", None, 3, "FLEX", "batch", "off_peak")] == ["standard"] * 6 + ["flex", "batch", "standard"]


def test_off_peak_applies_by_the_calls_utc_time():
    """DeepSeek's discount hours by default (16:30-00:30 UTC, past midnight), the start in, the
    end out; only standard calls; a tier's own hours when given."""
    p = Pricing(0.27, 1.10, 0.07, tiers=check_tier_prices({"off_peak": {"input": 0.135, "output": 0.55, "cached_input": 0.035}}), provider="deepseek")
    for hh, mm, tier in ((12, 0, "standard"), (16, 29, "standard"), (16, 30, "off_peak"), (23, 59, "off_peak"), (0, 15, "off_peak"), (0, 30, "standard")):
        assert p.price(reply(), utc(hh, mm))[1] == tier, (hh, mm)
    assert p.price(reply(cached=500_000), utc(17))[0] == pytest.approx(0.5 * 0.135 + 0.5 * 0.035 + 0.55)
    assert p.price(reply(tier="batch"), utc(17))[1] == "batch"
    clocked = Pricing(1.0, 1.0, tiers=check_tier_prices({"off_peak": {"input": 0.5, "output": 0.5, "hours": "02:00-06:00"}}), clock=lambda: utc(3))
    assert clocked.cost(reply()) == pytest.approx(1.0) and clocked.by_tier == {"off_peak": pytest.approx(1.0)}
    assert (parse_hours("16:30-00:30"), within((990, 30), utc(0, 29)), within((60, 120), utc(2))) == ((990, 30), True, False)


# prompt cache -----------------------------------------------------------------------------------


def test_anthropic_cache_writes_cost_more_by_the_ttl():
    """Anthropic's prompt tokens are uncached + read + written: reads at price_cached_input,
    writes at 1.25 x input (5 minutes) or 2 x (an hour), or the entry's multiple."""
    c = reply(prompt=1_000_000, output=0, cached=600_000, written=300_000)
    expect = lambda mult: (100_000 * 3.0 + 600_000 * 0.3 + 300_000 * 3.0 * mult) / 1e6  # noqa: E731
    assert Pricing(3.0, 15.0, 0.3, provider="anthropic").price(c)[0] == pytest.approx(expect(1.25))
    assert Pricing(3.0, 15.0, 0.3, provider="anthropic", cache_ttl="1h").price(c)[0] == pytest.approx(expect(2.0))
    assert Pricing(3.0, 15.0, 0.3, provider="anthropic", cache_write_multiplier=1.5).price(c)[0] == pytest.approx(expect(1.5))
    assert Pricing(3.0, 15.0, 0.3, provider="openai").price(c)[0] == pytest.approx(expect(1.0))


def test_openai_cached_input_at_its_price():
    c = reply(prompt=2_000_000, output=100_000, cached=1_500_000)
    assert Pricing(2.0, 8.0, 0.5, provider="openai").price(c)[0] == pytest.approx(0.5 * 2.0 + 1.5 * 0.5 + 0.1 * 8.0)
    assert Pricing(2.0, 8.0, None, provider="openai").price(c)[0] == pytest.approx(2.0 * 2.0 + 0.1 * 8.0)  # no cached price: the input price


def test_a_reply_is_priced_once():
    """The model's books and the turn read one figure: the first pricing is kept in the reply,
    even when the clock has since crossed into the off-peak hours."""
    times = iter([utc(16, 29), utc(16, 31), utc(16, 32)])
    p = Pricing(1.0, 1.0, tiers=check_tier_prices({"off_peak": {"input": 0.5, "output": 0.5}}), clock=lambda: next(times))
    c = reply()
    assert p.cost(c) == p.cost(c) == pytest.approx(2.0) and c.extra["billed_tier"] == "standard" and p.by_tier == {"standard": pytest.approx(2.0)}


# checking the setting -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prices, words",
    [
        ({"flux": {"input": 1}}, "unknown tier 'flux'"),
        ({"batch": {"inputs": 1}}, "unknown key 'inputs'"),
        ({"batch": {"hours": "01:00-02:00"}}, "unknown key 'hours'"),
        ({"flex": {"input": -1}}, "tier_prices.flex.input = -1 is not a price"),
        ({"flex": {"output": "cheap"}}, "is not a price"),
        ({"flex": 3}, "valid dictionary"),  # pydantic says it, before our check
        ({"off_peak": {"hours": "16:30"}}, "is not a span of UTC times"),
        ({"off_peak": {"hours": "25:00-01:00"}}, "not on a 24-hour clock"),
        ({"off_peak": {"hours": "08:00-08:00"}}, "is empty"),
    ],
)
def test_bad_tier_prices_are_one_line(prices, words, tmp_path):
    with pytest.raises(ValidationError) as err:
        ModelEntry(name="m", spec="openai/gpt-4o-mini", tier_prices=prices)
    assert words in str(err.value)
    path = tmp_path / "s.toml"
    path.write_text(study_toml("s", "glee.bargaining", models=[model("m", "openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1", tier_prices=prices)]))
    with pytest.raises(StudyError) as bad:
        load_study(path)
    assert words in str(bad.value) and "\n" not in str(bad.value)


def test_an_entrys_pricing():
    entry = ModelEntry(name="m", spec="anthropic/claude-sonnet-4-5", price_input=3, price_output=15, price_cached_input=0.3, cache_ttl="1h", tier_prices={"batch": {"input": 1.5}, "off_peak": {"input": 1}})
    p = Pricing.for_entry(entry)
    assert (p.input, p.output, p.cached_input, p.provider, p.write_multiplier) == (3, 15, 0.3, "anthropic", 2.0)
    assert p.tiers == {"batch": {"input": 1.5}, "off_peak": {"input": 1.0, "hours": "16:30-00:30"}}
    assert "tier_prices" not in entry.identity()  # prices never name a game


# a turn's cost ---------------------------------------------------------------------------------------


class Pick(Action):
    response_format: ClassVar = "json"
    choice: Literal["left", "right"]


class Flex:
    """A backend whose replies say flex served them, with prompt-cache reads."""

    serialized = False
    identity = "flex:test"

    async def complete(self, messages, settings):
        return Completion('{"choice": "left"}', 1000, 20, cached_tokens=600, extra={"service_tier": "flex"})

    def classify_error(self, exc):
        return None

    def probe_target(self):
        return None

    async def aclose(self):
        return None


def test_a_turns_cost_is_the_models_books():
    """LLMAgent's per-turn cost, tokens and tier are those the model booked, across an hour's
    edge of the clock."""
    times = iter(utc(16, 29) + i for i in range(100))
    m = Model(Flex(), GenerationSettings(), pricing=Pricing(2.0, 8.0, 0.5, provider="openai", tiers=check_tier_prices({"off_peak": {"input": 0.1}}), clock=lambda: next(times)))
    table = Table({"a": LLMAgent(m, sample="g")}, seed=1)
    asyncio.run(table.ask("a", Prompt("Pick a side."), Pick))
    (turn,) = table.turns
    assert turn.cost == pytest.approx(m.cost) == pytest.approx((400 * 1.0 + 600 * 0.25 + 20 * 4.0) / 1e6)
    assert (turn.tier, turn.cached_tokens, turn.cache_write_tokens, turn.fallbacks) == ("flex", 600, 0, 0)


# against the loopback Anthropic server's prompt cache --------------------------------------------------


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
@pytest.mark.parametrize("ttl, multiple", [("5m", 1.25), ("1h", 2.0)])
def test_anthropic_replies_are_billed_with_their_cache_reads_and_writes(ttl, multiple):
    """The loopback server's prompt cache (as the Messages API reports it): the first call writes
    the prefix, the next reads it and writes its new turn; each reply is billed reads at
    price_cached_input, writes at the TTL's multiple of price_input, and says its tier."""
    from agorabench.models.anthropic import AnthropicBackend
    from support.providers import provider_server

    words = lambda n, w: " ".join(f"{w}{i}" for i in range(n))  # noqa: E731
    first = [{"role": "system", "content": words(1000, "s")}, {"role": "user", "content": words(100, "a") + " Answer with {\"choice\": \"left or right\"} in JSON."}]
    with provider_server("anthropic", prompt_cache=True) as base:
        m = Model(AnthropicBackend("claude-sonnet-4-5", base_url=base, cache_ttl=ttl), GenerationSettings(max_tokens=50), pricing=Pricing(3.0, 15.0, 0.3, provider="anthropic", cache_ttl=ttl))

        async def go():
            try:
                a = await m.complete(first, sample=0)
                b = await m.complete(first + [{"role": "assistant", "content": a.text}, {"role": "user", "content": words(60, "b") + " Answer with {\"choice\": \"left or right\"} in JSON."}], sample=1)
                return a, b
            finally:
                await m.aclose()

        a, b = asyncio.run(go())
    assert a.extra.get("cache_write_tokens", 0) > 1000 and a.cached_tokens == 0
    assert b.cached_tokens > 1000 and b.extra.get("cache_write_tokens", 0) > 0 and b.extra["service_tier"] == "standard"
    for c in (a, b):
        written = c.extra.get("cache_write_tokens", 0)
        plain = c.prompt_tokens - c.cached_tokens - written
        assert c.extra["cost"] == pytest.approx((plain * 3.0 + c.cached_tokens * 0.3 + written * 3.0 * multiple + c.completion_tokens * 15.0) / 1e6)
    assert m.cost == pytest.approx(a.extra["cost"] + b.extra["cost"])
