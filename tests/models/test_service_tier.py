"""Service tiers on the loopback provider servers (tests/support/providers.py), which check
``service_tier`` as OpenAI and Gemini do and say which tier served each call:

- the tier is sent on chat completions (lean and SDK transports) and the Responses API, and the
  tier the provider reports is recorded per call (``extra["service_tier"]``) and billed;
- a flex call the tier has no capacity for (OpenAI's 429 ``resource_unavailable``) is retried
  with back-off and answered, without counting as a rate limit (the in-flight cap is kept); with
  ``service_tier_fallback`` it is made again at the standard tier, recorded per call;
- flex answers are slow: the request timeout follows (15 minutes unless the entry sets one);
- a request without a tier is byte for byte what it was before tiers existed."""

from __future__ import annotations

import asyncio

import pytest

from agorabench.core.seating import backend_options, build_backend
from agorabench.core.study import ModelEntry
from agorabench.models.base import BackendError, GenerationSettings
from agorabench.models.model import Model, Pricing, RetryPolicy
from agorabench.models.openai_compat import ChatCompletionsBackend, chat_request
from agorabench.models.providers import FLEX_TIMEOUT
from agorabench.models.transport.wire import flat_body
from support.providers import provider_server, server_stats

MESSAGES = [
    {"role": "system", "content": "You play a game of points."},
    {"role": "user", "content": "Choose A or B. Answer with {\"choice\": \"A or B\"} in JSON."},
]
SETTINGS = GenerationSettings(max_tokens=64)
FAST = RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.05)


@pytest.fixture(scope="module")
def openai_server():
    with provider_server("openai") as base:
        yield base


def _bodies(base: str) -> list[dict]:
    return [b for b in server_stats(base, bodies=True)["bodies"] if isinstance(b, dict)]


def _backend(base: str, **kwargs) -> ChatCompletionsBackend:
    return ChatCompletionsBackend("gpt-4o-mini", base_url=base, api_key_env="NO_SUCH_KEY_VARIABLE", **kwargs)


async def _complete(model: Model, n: int = 1):
    try:
        return [await model.complete(MESSAGES, SETTINGS, sample=i) for i in range(n)]
    finally:
        await model.aclose()


@pytest.mark.parametrize("transport", ["lean", "sdk", "responses"])
def test_flex_is_sent_echoed_and_billed_at_flex(openai_server, transport):
    """Every transport sends ``service_tier = "flex"``; the answer says flex served it, the reply
    records it, and it is billed at flex (on OpenAI: the batch price, half the standard)."""
    before = len(_bodies(openai_server))
    model = Model(_backend(openai_server, transport=transport, service_tier="flex"), SETTINGS, pricing=Pricing(2.0, 8.0, provider="openai"))
    (c,) = asyncio.run(_complete(model))
    sent = _bodies(openai_server)[before:]
    assert [b["service_tier"] for b in sent] == ["flex"]
    assert c.extra["service_tier"] == "flex" and c.extra["billed_tier"] == "flex"
    assert model.cost == pytest.approx((c.prompt_tokens * 1.0 + c.completion_tokens * 4.0) / 1e6)
    assert model.pricing.by_tier == {"flex": pytest.approx(model.cost)}


def test_without_a_tier_the_request_is_as_before_and_the_default_tier_is_recorded(openai_server):
    """No tier set: the body sent is exactly the request built as before (no ``service_tier``
    field); with one set, the body is the same plus that one field. OpenAI still says which tier
    served it (``default``), billed at the standard price. Neither the backend's identity nor the
    response cache's key depends on the tier."""
    before = len(_bodies(openai_server))
    plain, flex = Model(_backend(openai_server), SETTINGS), Model(_backend(openai_server, service_tier="flex"), SETTINGS)
    (c,) = asyncio.run(_complete(plain))
    asyncio.run(_complete(flex))
    unset, set_ = _bodies(openai_server)[before:]
    assert unset == flat_body(chat_request("gpt-4o-mini", "openai", MESSAGES, SETTINGS)) and "service_tier" not in unset
    assert {k: v for k, v in set_.items() if k != "service_tier"} == unset and list(set_)[-1] == "service_tier"
    assert c.extra["service_tier"] == "default" and c.extra["billed_tier"] == "standard"
    assert plain.backend.identity == flex.backend.identity
    assert plain.cache_key(MESSAGES, SETTINGS, 0) == flex.cache_key(MESSAGES, SETTINGS, 0)


def test_an_unknown_tier_is_refused_in_one_line_and_not_retried(openai_server):
    before = len(_bodies(openai_server))
    model = Model(_backend(openai_server, service_tier="cheap"), SETTINGS, retry=FAST)
    with pytest.raises(BackendError) as err:
        asyncio.run(_complete(model))
    assert "HTTP 400" in str(err.value) and "Invalid value: 'cheap'" in str(err.value) and "\n" not in str(err.value)
    assert len(_bodies(openai_server)) - before == 1 and model.retries == 0


def test_resource_unavailable_is_retried_with_backoff_then_answered():
    """The first two flex calls find no capacity (429 ``resource_unavailable``): the call is tried
    again after a back-off and answered at flex; the refusals are no rate limit (the model's
    in-flight cap is not halved)."""
    with provider_server("openai", unavailable=2) as base:
        model = Model(_backend(base, service_tier="flex"), SETTINGS, retry=FAST, max_concurrency=8)
        (c,) = asyncio.run(_complete(model))
        stats = server_stats(base)
    assert stats["statuses"] == {"429": 2, "200": 1} and stats["tiers"] == {"flex": 1}
    assert model.retries == 2 and model.rate_limited == 0 and model.limit.backoffs == 0 and model.limit.current == 8
    assert c.extra["service_tier"] == "flex" and "service_tier_fallback" not in c.extra


def test_resource_unavailable_without_end_fails_the_call_in_one_line():
    with provider_server("openai", unavailable=10) as base:
        model = Model(_backend(base, service_tier="flex"), SETTINGS, retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02))
        with pytest.raises(BackendError) as err:
            asyncio.run(_complete(model))
    assert "no capacity" in str(err.value) and "after 2 attempt(s)" in str(err.value) and "\n" not in str(err.value)


def test_fallback_makes_the_call_again_at_the_standard_tier_recorded_per_call():
    """With ``service_tier_fallback`` a flex call without capacity is made again at once without
    the tier (OpenAI's default): no retry, the reply says it fell back, billed at the standard
    price; a later call that flex can serve is served there."""
    with provider_server("openai", unavailable=1) as base:
        model = Model(_backend(base, service_tier="flex", service_tier_fallback=True), SETTINGS, retry=FAST, pricing=Pricing(2.0, 8.0, provider="openai"))
        first, second = asyncio.run(_complete(model, 2))
        bodies, stats = _bodies(base), server_stats(base)
    assert [b.get("service_tier") for b in bodies] == ["flex", None, "flex"]
    assert stats["tiers"] == {"default": 1, "flex": 1} and model.retries == 0
    assert first.extra["service_tier_fallback"] == "flex" and first.extra["service_tier"] == "default" and first.extra["billed_tier"] == "standard"
    assert "service_tier_fallback" not in second.extra and second.extra["billed_tier"] == "flex"
    assert set(model.pricing.by_tier) == {"standard", "flex"}


def test_flex_answers_are_slow_and_the_timeout_follows():
    """The entry's flex tier without a timeout of its own waits 15 minutes per call; one that
    sets a timeout keeps it (and a slow flex answer past it times out); other tiers keep the
    default. A flex answer that comes within the timeout is waited for."""
    def entry(**settings) -> ModelEntry:
        return ModelEntry(name="m", spec="openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1", **settings)

    assert backend_options(entry(service_tier="flex")).timeout == FLEX_TIMEOUT == 900.0
    assert backend_options(entry(service_tier="flex", timeout=30)).timeout == 30
    assert backend_options(entry(service_tier="priority")).timeout == 120.0
    assert backend_options(entry()).timeout == 120.0
    built = build_backend(entry(service_tier="flex", service_tier_fallback=True))
    assert (built.timeout, built.service_tier, built.service_tier_fallback) == (900.0, "flex", True)
    with provider_server("openai", flex_delay=0.6) as base:
        slow = Model(_backend(base, service_tier="flex", timeout=2.0), SETTINGS, retry=FAST)
        (c,) = asyncio.run(_complete(slow))
        assert c.latency >= 0.6 and c.extra["service_tier"] == "flex"
        short = Model(_backend(base, service_tier="flex", timeout=0.2), SETTINGS, retry=RetryPolicy(max_attempts=1))
        with pytest.raises(BackendError) as err:
            asyncio.run(_complete(short))
        plain = Model(_backend(base, timeout=0.2), SETTINGS)  # the default tier is not slowed
        asyncio.run(_complete(plain))
    assert "timeout" in str(err.value)


def test_gemini_reports_its_tier_in_a_header():
    """Gemini (OpenAI-compatible endpoint): the tier travels as ``service_tier``; the serving tier
    comes back in the ``x-gemini-service-tier`` header and is recorded; a priority call served at
    standard (Gemini's downgrade) is billed at the standard price."""
    gemini = lambda base, tier: ChatCompletionsBackend("gemini-2.5-flash", base_url=base, api_key_env="NO_SUCH_KEY_VARIABLE", dialect="gemini", service_tier=tier)  # noqa: E731
    prices = Pricing(1.0, 4.0, tiers={"priority": {"input": 1.8, "output": 7.2}}, provider="gemini")
    with provider_server("gemini") as base:
        flex, priority = (Model(gemini(base, t), SETTINGS, pricing=prices) for t in ("flex", "priority"))
        (f,) = asyncio.run(_complete(flex))
        (p,) = asyncio.run(_complete(priority))
        sent = [b.get("service_tier") for b in _bodies(base)]
    assert sent == ["flex", "priority"]
    assert (f.extra["service_tier"], f.extra["billed_tier"], p.extra["service_tier"], p.extra["billed_tier"]) == ("flex", "flex", "priority", "priority")
    assert f.extra["cost"] == pytest.approx((f.prompt_tokens * 0.5 + f.completion_tokens * 2.0) / 1e6)
    assert p.extra["cost"] == pytest.approx((p.prompt_tokens * 1.8 + p.completion_tokens * 7.2) / 1e6)
    with provider_server("gemini", downgrade=True) as base:
        model = Model(gemini(base, "priority"), SETTINGS, pricing=prices)
        (d,) = asyncio.run(_complete(model))
    assert d.extra["service_tier"] == "standard" and d.extra["billed_tier"] == "standard"


def test_a_tier_on_an_anthropic_model_is_refused_in_one_line(tmp_path):
    from agorabench.core.study import StudyError, load_study
    from support.studies import model, study_toml

    path = tmp_path / "s.toml"
    path.write_text(study_toml("s", "glee.bargaining", models=[model("c", "anthropic/claude-sonnet-4-5", service_tier="flex")]))
    with pytest.raises(StudyError) as err:
        load_study(path)
    assert "service_tier is sent to OpenAI-compatible APIs only" in str(err.value) and "\n" not in str(err.value)
    assert ModelEntry(name="m", spec="local", service_tier="flex").service_tier == "flex"  # a shared default leaves the embedded model alone
