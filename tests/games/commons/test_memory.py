"""The GovSim memory stream's rules (games/commons/memory.py): the score on hand-computed
numbers, always-included memories, strict expiry, chat summaries never retrieved, the original's
recency as a variant, a deterministic order, the fake calendar, the lines of a memory block and
the parsers of the model's answers."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pytest

from agorabench.games.commons.memory import (
    DEFAULT_IMPORTANCE,
    EXPIRY,
    EmbeddingCache,
    Memory,
    MemoryStream,
    first_sentence,
    format_date,
    memory_lines,
    month_dates,
    parse_importance,
    split_insights,
)

T0 = datetime(2024, 1, 1, 1, 0)


class FakeEmbed:
    """Vectors from a table (unknown texts: a vector orthogonal to every table entry); counts
    the texts it is asked for."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.asked: list[str] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.asked.extend(texts)
        return [self.table.get(t, [0.0, 0.0, 1.0]) for t in texts]


def three_thoughts(recency: str = "newest") -> tuple[MemoryStream, FakeEmbed]:
    """a (importance 1, cos 1), b (importance 10, cos 0), c (importance 4, cos 1/sqrt 2)."""
    embed = FakeEmbed({"q": [1, 0, 0], "a": [1, 0, 0], "b": [0, 1, 0], "c": [1, 1, 0]})
    stream = MemoryStream("Kate", recency=recency)
    stream.add("thought", "a", T0, importance=1)
    stream.add("thought", "b", T0 + timedelta(days=1), importance=10)
    stream.add("thought", "c", T0 + timedelta(days=2), importance=4)
    return stream, embed


def test_score_is_the_weighted_sum_on_hand_computed_numbers():
    stream, embed = three_thoughts()
    got = {s.memory.text: s for s in stream.scores("q", T0, embed)}
    # newest first: c has recency 1, b 0.99, a 0.99^2
    assert got["a"].score == pytest.approx(0.5 * 0.9801 + 3 * 0 + 2 * 1)  # 2.49005
    assert got["b"].score == pytest.approx(0.5 * 0.99 + 3 * 1 + 2 * 0)  # 3.495
    assert got["c"].score == pytest.approx(0.5 * 1 + 3 * (3 / 9) + 2 / math.sqrt(2))  # 2.91421
    assert (got["c"].recency, got["c"].importance, got["c"].relevance) == pytest.approx((1.0, 1 / 3, 1 / math.sqrt(2)))
    top2 = stream.retrieve(["q"], T0, 2, embed)
    assert [m.text for m in top2] == ["b", "c"]  # the two best, then by time written


def test_original_recency_counts_from_the_oldest():
    stream, embed = three_thoughts("original")
    got = {s.memory.text: s.score for s in stream.scores("q", T0, embed)}
    assert got["a"] == pytest.approx(0.5 * 1 + 2)  # the oldest gets recency 1
    assert got["c"] == pytest.approx(0.5 * 0.9801 + 1 + 2 / math.sqrt(2))


@pytest.mark.parametrize(("recency", "kept"), [("newest", "later"), ("original", "earlier")])
def test_the_original_variant_favours_the_oldest(recency, kept):
    embed = FakeEmbed({})
    stream = MemoryStream(recency=recency)
    stream.add("thought", "earlier", T0, importance=6)
    stream.add("thought", "later", T0 + timedelta(days=3), importance=6)
    assert [m.text for m in stream.retrieve(["lake"], T0, 1, embed)] == [kept]


def test_always_included_memories_score_the_best_plus_one():
    stream, embed = three_thoughts()
    stream.add("event", "stock", T0 + timedelta(days=3), importance=1, always_include=True)
    scores = {s.memory.text: s.score for s in stream.scores("q", T0, embed)}
    best = max(v for k, v in scores.items() if k != "stock")
    assert scores["stock"] == pytest.approx(best + 1)
    assert [m.text for m in stream.retrieve(["q"], T0, 1, embed)] == ["stock"]


def test_more_always_included_than_slots_keeps_the_earliest_written():
    stream = MemoryStream()
    for name in ("limit-1", "limit-2", "limit-3"):
        stream.add("thought", name, T0, always_include=True)
    stream.add("thought", "vital", T0, importance=10)
    assert [m.text for m in stream.retrieve(["q"], T0, 2, FakeEmbed({}))] == ["limit-1", "limit-2"]


def test_expiry_is_strictly_later_than_now():
    stream = MemoryStream()
    end = month_dates(1).reflection
    stream.add("event", "stock is 100", T0, expires=end, always_include=True)
    assert len(stream.retrievable(end - timedelta(minutes=1))) == 1
    assert stream.retrievable(end) == []
    assert stream.retrieve(["lake"], end, 10, FakeEmbed({})) == []


def test_chat_summaries_are_never_retrieved_by_default():
    embed = FakeEmbed({"q": [1, 0, 0], "summary": [1, 0, 0]})
    stream = MemoryStream()
    stream.add("chat", "summary", T0, importance=10, always_include=True)
    stream.add("thought", "note", T0, importance=1)
    assert stream.retrievable(T0) == [stream.memories[1]]
    assert [m.text for m in stream.retrieve(["q"], T0, 5, embed)] == ["note"]
    assert "summary" not in embed.asked  # nor embedded for a retrieval
    stream.retrieve_chat = True
    assert [m.text for m in stream.retrieve(["q"], T0, 5, embed)] == ["summary", "note"]


def test_union_over_focal_points_sorted_by_time_then_id():
    """Equal times come out by id (the original's order there changed between runs); the
    result does not depend on the order of the focal points or on repeating the call."""
    d = month_dates(1)
    embed = FakeEmbed({"x": [1, 0, 0], "y": [0, 1, 0], "about x": [1, 0, 0], "about y": [0, 1, 0]})

    def build() -> MemoryStream:
        s = MemoryStream()
        s.add("thought", "about y", d.chat, importance=2)  # id 1
        s.add("thought", "filler", d.harvest, importance=2)  # id 2, written earlier in time
        s.add("thought", "about x", d.chat, importance=2)  # id 3, same time as id 1
        return s

    first = [m.id for m in build().retrieve(["x", "y"], d.harvest, 1, embed)]
    assert first == [1, 3]
    assert [m.id for m in build().retrieve(["y", "x"], d.harvest, 1, embed)] == first
    stream = build()
    assert all([m.id for m in stream.retrieve(["x", "y"], d.harvest, 3, embed)] == [2, 1, 3] for _ in range(5))


def test_each_text_is_embedded_once_and_caches_can_be_shared():
    cache = EmbeddingCache()
    embed = FakeEmbed({})
    kate, jack = MemoryStream("Kate", cache=cache), MemoryStream("Jack", cache=cache)
    for stream in (kate, jack):
        stream.add("thought", "we agreed on 10 each", T0, always_include=True)
        stream.add("thought", f"{stream.owner} likes fish", T0, importance=3)
    kate.retrieve(["lake"], T0, 10, embed)
    kate.retrieve(["lake"], T0, 10, embed)
    jack.retrieve(["lake"], T0, 10, embed)
    assert sorted(embed.asked) == sorted(["lake", "we agreed on 10 each", "Kate likes fish", "Jack likes fish"])
    # an async caller embeds the missing texts itself, then retrieval needs no callable
    jack.add("thought", "new", T0)
    todo = cache.missing(jack.texts_to_embed(["lake", "harvesting"], T0))
    assert todo == ["harvesting", "new"]
    cache.put(todo, embed(todo))
    assert len(jack.retrieve(["lake", "harvesting"], T0, 10)) == 3


def test_a_query_prefix_is_embedded_with_the_query_only():
    embed = FakeEmbed({})
    stream = MemoryStream()
    stream.add("thought", "note", T0)
    stream.retrieve(["lake"], T0, 5, embed, query_prefix="Find: ")
    assert embed.asked == ["Find: lake", "note"]


def test_bad_vectors_and_records_are_refused():
    cache = EmbeddingCache()
    with pytest.raises(ValueError, match="2 texts, got 1"):
        cache.put(["a", "b"], [[1.0]])
    cache.put(["a"], [[1.0, 0.0]])
    with pytest.raises(ValueError, match="dimensions"):
        cache.put(["b"], [[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="finite"):
        cache.put(["c"], [[float("nan"), 0.0]])
    stream = MemoryStream(cache=cache)
    stream.add("thought", "x", T0)
    with pytest.raises(ValueError, match="no embed callable"):
        stream.retrieve(["q"], T0, 1)
    with pytest.raises(ValueError, match="importance"):
        Memory(1, "thought", "x", T0, T0, 11)
    with pytest.raises(ValueError, match="kind"):
        Memory(1, "action", "x", T0, T0, 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="recency"):
        MemoryStream(recency="oldest")  # type: ignore[arg-type]


def test_zero_vectors_have_no_relevance():
    stream = MemoryStream()
    stream.add("thought", "", T0, importance=1)
    (scored,) = stream.scores("", T0, lambda texts: [[0.0, 0.0] for _ in texts])
    assert scored.relevance == 0.0 and scored.score == pytest.approx(0.5)


def test_calendar():
    jan = month_dates(1)
    assert (jan.harvest, jan.outcome, jan.chat, jan.reflection) == (
        datetime(2024, 1, 1, 1, 0),
        datetime(2024, 1, 30, 0, 59),
        datetime(2024, 1, 30, 1, 0),
        datetime(2024, 1, 31, 1, 0),
    )
    feb = month_dates(2)  # 2024 is a leap year
    assert (feb.chat.day, feb.reflection.day) == (28, 29)
    assert month_dates(13).harvest == datetime(2025, 1, 1, 1, 0)
    assert month_dates(14).reflection == datetime(2025, 2, 28, 1, 0)
    with pytest.raises(ValueError):
        month_dates(0)
    # expiries of month 1 as the specification's stub run shows them
    assert format_date(jan.harvest + EXPIRY) == "2024-03-04"  # notes of seats 1-4
    assert format_date(jan.chat + EXPIRY) == "2024-04-02"  # the agreed limit
    assert format_date(jan.reflection + EXPIRY) == "2024-04-03"  # insights


def test_june_insights_are_gone_at_the_september_harvest():
    """63 days after 30 June is 1 September, the harvest time itself: expiry is strict."""
    stream = MemoryStream()
    for month in (5, 6, 7, 8):
        stream.add("thought", f"insight {month}", month_dates(month).reflection)
    alive = [m.text for m in stream.retrievable(month_dates(9).harvest)]
    assert alive == ["insight 7", "insight 8"]
    alive_april = [m.text for m in MemoryStream(memories=[Memory(1, "thought", "jan", month_dates(1).reflection, month_dates(1).reflection + EXPIRY, 5)]).retrievable(month_dates(4).harvest)]
    assert alive_april == ["jan"]


def test_memory_lines():
    d = month_dates(3)
    stream = MemoryStream()
    stream.add("event", "The lake holds 80 tons.", d.harvest)
    stream.add("thought", "We agreed on 10 each", d.chat)
    assert memory_lines(stream.memories) == ["- 2024-03-01: The lake holds 80 tons.", "- 2024-03-30: We agreed on 10 each"]
    assert memory_lines(stream.memories, numbered=True) == ["1) 2024-03-01: The lake holds 80 tons.", "2) 2024-03-30: We agreed on 10 each"]
    assert memory_lines([]) == []


@pytest.mark.parametrize(
    ("answer", "rating"),
    [("7", 7), ("Rating: 10", 10), (" 1 ", 1), ("I'd say 3/10", 3), ("none", DEFAULT_IMPORTANCE), ("", DEFAULT_IMPORTANCE), ("0", 5), ("11", 5), ("100", 5)],
)
def test_importance_rating(answer, rating):
    assert DEFAULT_IMPORTANCE == 5
    assert parse_importance(answer) == rating


def test_importance_default_can_be_named():
    assert parse_importance("no idea", default=1) == 1


def test_insights_split_on_numbers_and_justifications():
    answer = "1. Fish stays above half (because of 1, 3)\n2. Others keep the limit (because of 2)\n3. Trust grows"
    assert split_insights(answer, 10) == ["Fish stays above half", "Others keep the limit", "Trust grows"]
    assert split_insights(answer, 2) == ["Fish stays above half", "Others keep the limit"]
    assert split_insights(answer, 0) == []
    # the leading number is optional (the original prefilled it)
    assert split_insights("A\n2. B", 5) == ["A", "B"]
    # a justification not followed by the next number ends the list
    assert split_insights("1. A (because of 1) and more\n3. C", 5) == ["A"]
    # 2.5 is not the number 2. (the original would cut there)
    assert split_insights("1. Take 2.5 tons\n2. Keep 12 tons", 5) == ["Take 2.5 tons", "Keep 12 tons"]
    assert split_insights("", 5) == []
    assert split_insights("1. (because of 1)\n2. B", 5) == ["B"]  # empty insights are left out


def test_first_sentence():
    assert first_sentence("We agreed on 2.5 tons each. Then we left.") == "We agreed on 2.5 tons each"
    assert first_sentence("  No period here ") == "No period here"
    assert first_sentence("") == ""
