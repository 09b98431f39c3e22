"""The prompt-cache simulator's rules on hand-made conversations whose cached share is known
exactly (one character = one token, so every count is the length of a text)."""

from __future__ import annotations

import pytest

from agorabench.models.prompt_cache import (
    CacheShare,
    anthropic_min_tokens,
    anthropic_share,
    as_messages,
    chars_over_4,
    openai_share,
)


def one(n: int, ch: str) -> str:
    return ch * n


def msg(role: str, text: str) -> dict[str, str]:
    return {"role": role, "content": text}


SYSTEM = one(1100, "s")


# OpenAI ---------------------------------------------------------------------------------------


def test_openai_below_the_minimum_nothing_is_cached():
    call = [msg("system", one(900, "s")), msg("user", one(100, "u"))]  # 1,000 tokens, twice
    share = openai_share([[call, call]], 1.0, 0.5, count_tokens=len)
    assert share.calls == 2 and share.calls_below_min == 2
    assert share.read_tokens == 0 and share.share == 0
    assert share.cost_with == share.cost_without == pytest.approx(2000 / 1e6)
    assert share.limits()[0].startswith("100% of calls are below the 1,024-token minimum")


def test_openai_reads_the_common_prefix_in_128_token_steps():
    first = [msg("system", SYSTEM), msg("user", one(100, "u"))]  # 1,200
    second = first + [msg("assistant", one(50, "a")), msg("user", one(100, "v"))]  # 1,350
    share = openai_share([[first, second]], 2.0, 0.5, count_tokens=len)
    # the first call finds nothing; the second shares its 1,200 tokens, read as 9 x 128 = 1,152
    assert share.read_tokens == 1152
    assert share.rounding_tokens == 48
    assert share.cold_calls == 1 and share.cold_tokens == 1200
    assert share.new_tokens == 1350 - 1152
    assert share.input_tokens == 2550
    # writes are billed as input (no fee): 1,152 by the first call, 1,280 - 1,152 by the second
    assert share.write_tokens == 1152 + 128
    assert share.cost_without == pytest.approx(2550 * 2.0 / 1e6)
    assert share.cost_with == pytest.approx(((2550 - 1152) * 2.0 + 1152 * 0.5) / 1e6)
    assert any("lost to the 128-token steps" in line for line in share.limits())


def test_openai_common_prefix_inside_a_message_counts():
    first = [msg("system", one(1000, "s")), msg("user", one(200, "x"))]
    second = [msg("system", one(1000, "s")), msg("user", one(150, "x") + one(50, "y"))]
    share = openai_share([[first, second]], 1.0, 0.1, count_tokens=len)
    assert share.read_tokens == 1024  # 1,150 in common: 8 steps of 128


def test_openai_prefix_below_the_minimum_reads_nothing():
    first = [msg("system", one(1000, "s")), msg("user", one(200, "x"))]
    second = [msg("system", one(1000, "s")), msg("user", one(200, "y"))]  # 1,000 in common
    share = openai_share([[first, second]], 1.0, 0.1, count_tokens=len)
    assert share.read_tokens == 0 and share.cold_calls == 2


def test_openai_key_per_seat_or_shared():
    call = [msg("system", SYSTEM), msg("user", one(300, "u"))]  # 1,400: 1,280 cacheable
    per_seat = openai_share([[call], [call]], 1.0, 0.5, count_tokens=len)
    assert per_seat.read_tokens == 0  # another seat's key: another cache
    shared = openai_share([[call], [call]], 1.0, 0.5, shared=True, count_tokens=len)
    assert shared.read_tokens == 1280


def test_openai_write_multiplier_of_newer_models():
    call = [msg("system", SYSTEM), msg("user", one(180, "u"))]  # 1,280
    share = openai_share([[call]], 1.0, 0.1, write_multiplier=1.25, count_tokens=len)
    assert share.write_tokens == 1280
    assert share.cost_with == pytest.approx(1280 * 1.25 / 1e6)


# Anthropic ------------------------------------------------------------------------------------


def test_anthropic_below_the_minimum_nothing_is_written_or_read():
    call = [msg("system", one(500, "s")), msg("user", one(400, "u"))]
    share = anthropic_share([[call, call]], 3.0, count_tokens=len)
    assert share.read_tokens == share.write_tokens == 0
    assert share.calls_below_min == 2
    assert share.cost_with == share.cost_without


def test_anthropic_write_then_read():
    first = [msg("system", one(1200, "s")), msg("user", one(100, "u"))]
    second = first + [msg("assistant", one(50, "a")), msg("user", one(100, "v"))]
    share = anthropic_share([[first, second]], 3.0, count_tokens=len)
    # the first call writes its 1,300 tokens (breakpoints: system, its user turn); the second
    # reads them at its previous user turn's breakpoint and writes the 150 tokens after
    assert share.read_tokens == 1300
    assert share.write_tokens == 1300 + 150
    assert share.input_tokens == 1300 + 1450
    assert share.cost_without == pytest.approx(2750 * 3.0 / 1e6)
    assert share.cost_with == pytest.approx((1450 * 3.75 + 1300 * 0.30) / 1e6)
    assert "writes cost 1.25 x input" in share.limits()[-1]


def test_anthropic_one_hour_ttl_writes_at_twice_the_input_price():
    first = [msg("system", one(1200, "s")), msg("user", one(100, "u"))]
    share = anthropic_share([[first]], 3.0, ttl="1h", count_tokens=len)
    assert share.write_tokens == 1300
    assert share.cost_with == pytest.approx(1300 * 6.0 / 1e6)
    with pytest.raises(ValueError):
        anthropic_share([[first]], 3.0, ttl="2h")


def test_anthropic_reads_only_a_prefix_written_exactly():
    first = [msg("system", one(1200, "s")), msg("user", one(100, "u"))]
    other = [msg("system", one(1199, "s") + "t"), msg("user", one(100, "u"))]
    share = anthropic_share([[first, other]], 3.0, count_tokens=len)
    assert share.read_tokens == 0 and share.cold_calls == 2
    # the same system block written apart is read: a system prompt over the minimum alone
    again = [msg("system", one(1200, "s")), msg("user", one(100, "w"))]
    share = anthropic_share([[first, again]], 3.0, count_tokens=len)
    assert share.read_tokens == 1200


def test_anthropic_lookback_finds_a_prefix_between_breakpoints():
    first = [msg("system", one(1200, "s")), msg("user", one(100, "u"))]  # writes S and S+U1
    later = first + [msg("assistant", "a"), msg("user", one(10, "v")), msg("assistant", "b"), msg("user", one(10, "w"))]
    # breakpoints of the later call: S, U2, U3; U1 (where the first call wrote) is 2 blocks before U2
    assert anthropic_share([[first, later]], 3.0, count_tokens=len).read_tokens == 1300
    assert anthropic_share([[first, later]], 3.0, lookback=1, count_tokens=len).read_tokens == 1200


def test_anthropic_cache_is_shared_across_seats_unless_told():
    call = [msg("system", one(1200, "s")), msg("user", one(100, "u"))]
    assert anthropic_share([[call], [call]], 3.0, count_tokens=len).read_tokens == 1300
    assert anthropic_share([[call], [call]], 3.0, shared=False, count_tokens=len).read_tokens == 0


def test_anthropic_minimum_by_model():
    assert anthropic_min_tokens("claude-sonnet-4-5") == 1024
    assert anthropic_min_tokens("claude-sonnet-4.5") == 1024
    assert anthropic_min_tokens("claude-haiku-4-5-20251001") == 4096
    assert anthropic_min_tokens("claude-opus-4-6") == 4096
    assert anthropic_min_tokens("claude-3-5-haiku-20241022") == 2048
    assert anthropic_min_tokens("claude-opus-4-1") == 1024
    call = [msg("system", one(3000, "s")), msg("user", one(100, "u"))]
    haiku = anthropic_share([[call, call]], 1.0, min_tokens=anthropic_min_tokens("claude-haiku-4-5"), count_tokens=len)
    assert haiku.read_tokens == 0 and haiku.calls_below_min == 2


# shapes -----------------------------------------------------------------------------------------


def test_texts_take_a_transcripts_roles():
    assert [m["role"] for m in as_messages(["sys", "u1", "a1", "u2"])] == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in as_messages(["u1", "a1", "u2"])] == ["user", "assistant", "user"]
    with pytest.raises(ValueError):
        as_messages(["u1", {"role": "user", "content": "x"}])
    texts = [SYSTEM, one(100, "u")]
    dicts = [msg("system", SYSTEM), msg("user", one(100, "u"))]
    assert openai_share([[texts, texts]], 1.0, 0.5, count_tokens=len) == openai_share([[dicts, dicts]], 1.0, 0.5, count_tokens=len)


def test_shares_add_up_and_scale():
    call = [msg("system", SYSTEM), msg("user", one(300, "u"))]
    a = openai_share([[call, call]], 1.0, 0.5, count_tokens=len)
    both = a + a.scaled(2)
    assert both.input_tokens == 3 * a.input_tokens and both.read_tokens == 3 * a.read_tokens
    assert both.share == pytest.approx(a.share) and both.calls == 6
    with pytest.raises(ValueError):
        a + anthropic_share([[call]], 1.0)
    assert "from the cache" in a.summary()


def test_default_measure_is_characters_over_four():
    assert chars_over_4("abcdefgh") == 2
    empty = openai_share([], 1.0, 0.5)
    assert isinstance(empty, CacheShare) and empty.share == 0 and empty.limits() == ["no input"]
