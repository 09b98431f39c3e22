"""The trust game's human reference data: the shipped pairs reproduce what Berg, Dickhaut &
McCabe (1995) print (their Appendix B, the summary table beside it and the means of their
text), the yardstick is built from them, and the human-resampler scores like people in the
behavioural Turing score while a constant investor far from them does not."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from agorabench.analysis.yardstick import read_rows, turing
from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.trust import humans
from agorabench.games.trust.humans import mean_returned, mean_sent, NO_HISTORY, pairs, samples, SOCIAL_HISTORY, YARDSTICK
from agorabench.games.trust.strategies import HumanResampler, Reciprocal, Selfish, Trusting
from agorabench.games.trust.trust import Trust, TrustConfig

DATA = Path(humans.__file__).parent / "data"


def test_the_file_holds_every_pair_of_both_treatments():
    rows = read_rows(DATA / "berg1995_pairs.csv")
    assert list(rows[0]) == ["treatment", "session", "pair", "sent", "returned"]
    assert len(pairs(NO_HISTORY)) == 32 and len(pairs(SOCIAL_HISTORY)) == 28 and len(pairs()) == 60
    assert Counter(p.session for p in pairs(NO_HISTORY)) == {"1992-07-13": 10, "1992-07-19": 10, "1992-07-23": 12}
    assert Counter(p.session for p in pairs(SOCIAL_HISTORY)) == {"1992-07-27": 10, "1992-07-31": 9, "1992-08-03": 9}
    assert all(0 <= p.sent <= 10 and 0 <= p.returned <= 3 * p.sent for p in pairs())
    assert [p.pair for p in pairs(SOCIAL_HISTORY)] == list(range(1, 29))


def test_the_readers_reproduce_the_means_of_the_text():
    """p. 131: $5.16 sent, $4.66 paid back on average (n = 32); p. 134: $5.36 and $6.46 (n = 28)."""
    assert round(mean_sent(NO_HISTORY), 2) == 5.16 and round(mean_returned(NO_HISTORY), 2) == 4.66
    assert round(mean_sent(SOCIAL_HISTORY), 2) == 5.36 and round(mean_returned(SOCIAL_HISTORY), 2) == 6.46
    # p. 131: only 2 of the 32 room-A subjects sent nothing, 5 sent all $10
    sent = Counter(p.sent for p in pairs(NO_HISTORY))
    assert sent[0] == 2 and sent[10] == 5


def test_the_no_history_pairs_match_the_summary_table_of_page_141():
    """The summary shown to the social-history subjects: how many sent each amount and the mean
    returned for it."""
    counts = {0: 2, 1: 2, 2: 2, 3: 4, 4: 2, 5: 6, 6: 5, 7: 3, 8: 1, 9: 0, 10: 5}
    returned = {0: 0.00, 1: 0.50, 2: 2.00, 3: 3.00, 4: 1.00, 5: 7.17, 6: 4.80, 7: 2.67, 8: 4.00, 10: 10.20}
    by_amount: dict[int, list[int]] = {}
    for p in pairs(NO_HISTORY):
        by_amount.setdefault(p.sent, []).append(p.returned)
    assert {k: len(by_amount.get(k, [])) for k in counts} == counts
    assert {k: round(sum(v) / len(v), 2) for k, v in by_amount.items()} == returned


def test_the_yardstick_is_built_from_the_no_history_pairs():
    assert [m.name for m in YARDSTICK.measures] == ["sent_share", "returned_share"]
    assert all(m.where == {"round": 1} for m in YARDSTICK.measures)
    assert [m.phase for m in YARDSTICK.measures] == ["send", "return"]
    sent, back = samples(NO_HISTORY)
    assert YARDSTICK.samples == (sent, back)
    assert sent.n == 32 and sent.mean() == pytest.approx(0.515625) and sent.where == {"multiplier": 3}
    assert back.n == 30 and back.mean() == pytest.approx(np.mean([p.returned / (3 * p.sent) for p in pairs(NO_HISTORY) if p.sent]))
    assert max(back.values) == 1.0 and back.share(lambda v: v == 0) == pytest.approx(6 / 30)  # 6 of 30 returned nothing
    published = {(p.measure, p.n): p.value for p in YARDSTICK.published}
    assert published == {("sent_share", 32): 0.516, ("sent_share", 28): 0.536}
    assert published["sent_share", 32] == round(mean_sent(NO_HISTORY) / 10, 3)
    assert published["sent_share", 28] == round(mean_sent(SOCIAL_HISTORY) / 10, 3)


def test_the_data_folder_says_where_each_file_comes_from_and_ships_its_licence():
    sources = (DATA / "SOURCES.md").read_text(encoding="utf-8")
    assert "berg1995_pairs.csv" in sources and "LICENSE-humanstudy-bench" in sources and "study_012" in sources
    assert "Johnson" in sources  # what was left out, and why
    licence = (DATA / "LICENSE-humanstudy-bench").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Permission is hereby granted" in licence


def _first_round_values(investor_factory, trustee_factory, column: str, games: int = 300, **config) -> np.ndarray:
    """The values of ``column`` noted in the first round of ``games`` scripted games."""
    game = Trust(TrustConfig(**config), Prompts(Trust.prompt_dir))

    async def all_games() -> list[float]:
        values = []
        for seed in range(games):
            table = Table({"investor": investor_factory(), "trustee": trustee_factory()}, seed=seed)
            await game.play(table)
            values += [t.metrics[column] for t in table.turns if column in t.metrics and t.metrics.get("round") == 1]
        return values

    return np.asarray(asyncio.run(all_games()))


@pytest.fixture(scope="module")
def sent_by_the_resampler() -> np.ndarray:
    values = _first_round_values(HumanResampler, Reciprocal, "sent_share")
    assert len(values) == 300
    return values


def test_the_human_resampler_sends_like_people_and_a_constant_investor_does_not(sent_by_the_resampler):
    """The resampler's likeness is about a person's (0.5); an investor that always sends 8 of 10
    (what 1 of the 32 people did) scores far below it, its whole interval under 0.5. Sending
    nothing always (2 of 32 did) scores low too, but with 32 people its interval is wide: bins
    holding 1 to 2 of them cannot be ranked with confidence."""
    measure = YARDSTICK.measure("sent_share")
    sample = samples(NO_HISTORY).sent_share
    like = turing(sample, sent_by_the_resampler, measure)
    assert abs(like.likeness - 0.5) < 0.05, like  # 300 draws from the 32 people
    eight = _first_round_values(lambda: Trusting(share=0.8), Reciprocal, "sent_share", games=50)
    far = turing(sample, eight, measure)
    assert far.likeness_ci[1] < 0.5 and far.likeness == pytest.approx((1 / 32) / 2), far  # bin 8 ties only itself
    nothing = turing(sample, _first_round_values(Selfish, Reciprocal, "sent_share", games=50), measure)
    assert nothing.likeness == pytest.approx(1 / 32 + (8 / 32) / 2)  # wins over bin 8, ties the bins of 2
    assert nothing.likeness < like.likeness - 0.25


def test_the_human_resamplers_likeness_interval_contains_one_half(sent_by_the_resampler):
    measure = YARDSTICK.measure("sent_share")
    sample = samples(NO_HISTORY).sent_share
    like = turing(sample, sent_by_the_resampler, measure)
    assert like.likeness_ci[0] <= 0.5 <= like.likeness_ci[1], like


def test_the_human_resampler_returns_like_people():
    measure = YARDSTICK.measure("returned_share")
    sample = samples(NO_HISTORY).returned_share
    resampled = _first_round_values(lambda: Trusting(share=1.0), HumanResampler, "returned_share")
    like = turing(sample, resampled, measure)
    assert like.likeness_ci[0] <= 0.5 <= like.likeness_ci[1], like
    # returning nothing is the people's most common choice (12 of 30 returned under a tenth), so a
    # constant far from them is one that returns everything (1 of 30 did)
    returns_all = _first_round_values(lambda: Trusting(share=1.0), lambda: Reciprocal(share=1.0), "returned_share", games=50)
    far = turing(sample, returns_all, measure)
    assert far.likeness_ci[1] < 0.5 and far.likeness == pytest.approx((3 / 30) / 2), far  # ties the bins holding 1 of 30
