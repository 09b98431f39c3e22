"""Issue 39 §4: the cost plan within 10 % of what a loopback run is billed, for seats with a
prompt cache (Anthropic's reads and writes, OpenAI's cached input), at the flex tier and in batch
mode. A commons fishery of the legacy protocol without chat (each agent rereads its whole
transcript, so prompts grow past the caches' 1,024-token minimum; every game the same 60 calls)
is run with one priced model in every seat against a fresh loopback server whose prompt cache
reports usage as the provider's API does (tests/support/providers.py ``--prompt-cache``, behind
the batch routes of batch_servers.py), then planned with output per call at the run's mean
(tests/support/billing.py). Besides the total, each part is checked on its own: the plan's
prices on the run's own tokens are the model's books to the cent, and the plan's cache
simulator replayed on the run's own prompts reads and writes what the server reported.

The OpenAI seats name no ``base_url`` (OpenAI's own API, for the plan's cache rules and the
backend's ``prompt_cache_key``); the run reaches the loopback through the ``openai`` provider's
default address and API host, patched in this process (billing.openai_own_api)."""

from __future__ import annotations

import pytest
from support.billing import SEATS, Compared, compare

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")  # the Anthropic SDK on the loopback's model name

TIERS = {"anthropic": "standard", "openai": "standard", "flex": "flex", "anthropic-batch": "batch", "openai-batch": "batch"}
#: The no-chat commons: 5 agents x 12 months, one harvest each.
CALLS = 60


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> dict[str, Compared]:
    work = tmp_path_factory.mktemp("billed")
    return {key: compare(SEATS[key], "commons", work, steps=0) for key in TIERS}


@pytest.mark.parametrize("seat", list(TIERS))
def test_the_plan_is_within_a_tenth_of_the_billed_cost(seat, compared):
    c = compared[seat]
    assert c.tier == TIERS[seat] and c.tiers == {TIERS[seat]: CALLS}  # planned and billed at the seat's tier, every call
    assert c.plan.calls == c.run.calls == CALLS and c.retries == 0
    assert c.run.cached > 0.2 * c.run.input  # the server's cache served a good part of the input
    if seat.startswith("anthropic"):
        assert c.run.written > 0 and c.plan.written > 0
    # the parts: the plan prices the run's own tokens as the books did; its simulator, given the
    # run's own prompts, reads (and writes) what the server reported
    assert c.priced == pytest.approx(c.run.cost, rel=1e-9)
    assert c.replayed == (c.run.cached, c.run.written)
    # the whole: within 10 % (the plan's stand-ins write shorter answers, so its prompts are a
    # little shorter and fewer of them reach the cache's minimum)
    assert abs(c.ratio - 1) <= 0.10, (c.plan, c.run)
    if TIERS[seat] == "batch":
        assert c.rounds == 12  # one batch round a month: the five harvests of a month together


def test_flex_and_batch_are_billed_at_half_the_standard_price(compared):
    standard = compared["openai"].run
    for seat in ("flex", "openai-batch"):
        run = compared[seat].run
        assert (run.input, run.cached, run.output) == (standard.input, standard.cached, standard.output)
        assert run.cost == pytest.approx(standard.cost / 2)
    assert compared["anthropic-batch"].run.cost == pytest.approx(compared["anthropic"].run.cost / 2)


def test_anthropic_reads_without_a_cached_price_are_planned_and_billed_alike(tmp_path):
    c = compare(SEATS["anthropic-no-read-price"], "commons", tmp_path, steps=0)
    assert c.run.cached > 0
    assert c.priced == pytest.approx(c.run.cost, rel=1e-9)
