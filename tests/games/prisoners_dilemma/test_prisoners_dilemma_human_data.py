"""The prisoner's dilemma's human reference data: the shipped triads reproduce Shafir & Tversky's
(1992) Table 1 and the shares of their text (and HumanStudy-Bench's counts), the yardstick is
built from them, and the human-resampler scores like people in the behavioural Turing score
while always cooperating does not (people mostly defected)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from agorabench import families
from agorabench.analysis.yardstick import read_rows, turing
from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.prisoners_dilemma import humans
from agorabench.games.prisoners_dilemma.humans import (
    cooperated, disjunction_triads, games, share, TOLD_COMPETED, TOLD_COOPERATED, triads, UNKNOWN, unknown_sample, YARDSTICK,
)
from agorabench.games.prisoners_dilemma.prisoners_dilemma import PrisonersDilemma, PrisonersDilemmaConfig
from agorabench.games.prisoners_dilemma.strategies import AlwaysCooperate, HumanResampler, Selfish

DATA = Path(humans.__file__).parent / "data"


def test_the_file_holds_every_pattern_of_the_444_triads():
    rows = read_rows(DATA / "shafir_tversky_1992_triads.csv")
    assert list(rows[0]) == ["if_other_competed", "if_other_cooperated", "if_unknown", "triads"]
    patterns = {(t.if_other_competed, t.if_other_cooperated, t.if_unknown) for t in triads()}
    assert len(triads()) == len(patterns) == 8 and all(set(p) <= {"cooperate", "compete"} for p in patterns)
    assert games() == 444  # p. 455: a total of 444 triads


def test_the_readers_reproduce_the_shares_of_the_text():
    """p. 455: 3 % cooperated when told the other competed, 16 % when told it cooperated, 37 %
    when the other's choice was unknown; the same counts as HumanStudy-Bench's ground truth
    (14/444, 73/444, 164/444)."""
    assert (cooperated(TOLD_COMPETED), cooperated(TOLD_COOPERATED), cooperated(UNKNOWN)) == (14, 73, 164)
    assert [round(100 * share(c)) for c in (TOLD_COMPETED, TOLD_COOPERATED, UNKNOWN)] == [3, 16, 37]
    assert share(UNKNOWN) == pytest.approx(0.369, abs=5e-4)  # 164 / 444 = 36.9 %
    # the disjunction pattern: compete when told either choice, cooperate when not told (25 %, 113 of 444)
    assert disjunction_triads() == 113 and round(100 * disjunction_triads() / games()) == 25


def test_the_triads_give_table_1a_and_the_margins_of_table_1():
    """Table 1A: rows = the choice when told the other cooperated, columns = when told it
    competed: 364, 7 (row total 371, 84 %) and 66, 7 (73, 16 %); column totals 430 (97 %), 14 (3 %)."""
    cells: dict[tuple[str, str], int] = {}
    for t in triads():
        key = (t.if_other_cooperated, t.if_other_competed)
        cells[key] = cells.get(key, 0) + t.triads
    assert cells == {("compete", "compete"): 364, ("compete", "cooperate"): 7, ("cooperate", "compete"): 66, ("cooperate", "cooperate"): 7}
    assert 444 - cooperated(TOLD_COOPERATED) == 371 and 444 - cooperated(TOLD_COMPETED) == 430
    # Table 1B: the unknown condition's choices within each cell of 1A
    b = {(t.if_other_cooperated, t.if_other_competed, t.if_unknown): t.triads for t in triads()}
    assert [b["compete", "compete", "cooperate"], b["compete", "compete", "compete"]] == [113, 251]
    assert [b["compete", "cooperate", "cooperate"], b["compete", "cooperate", "compete"]] == [3, 4]
    assert [b["cooperate", "compete", "cooperate"], b["cooperate", "compete", "compete"]] == [43, 23]
    assert [b["cooperate", "cooperate", "cooperate"], b["cooperate", "cooperate", "compete"]] == [5, 2]
    # p. 456: of the triads cooperating when the other's choice was unknown, 69 % competed when told either choice
    assert round(100 * 113 / cooperated(UNKNOWN)) == 69


def test_the_yardstick_is_the_unknown_condition_of_one_shot_games():
    assert families.references("prisoners_dilemma") is YARDSTICK  # the manifest points at it
    (measure,) = YARDSTICK.measures
    assert (measure.name, measure.phase, measure.column, measure.lo, measure.hi, measure.bins) == ("cooperate", "choose", "cooperate", 0.0, 1.0, 2)
    assert measure.where == {"round": 1}
    (sample,) = YARDSTICK.samples
    assert sample is unknown_sample() and sample.values == (0.0, 1.0) and sample.counts == (280, 164) and sample.n == 444
    assert sample.mean() == pytest.approx(164 / 444) and sample.where == {"horizon": "one-shot"}
    published = {p.statistic: p for p in YARDSTICK.published}
    assert {s: (p.value, p.n) for s, p in published.items()} == {
        "share cooperating when told the other competed": (14 / 444, 444),
        "share cooperating when told the other cooperated": (73 / 444, 444),
    }
    # conditions the game never plays: shown for people only (no test, not a mean a model could be given)
    assert all(p.test is None and p.statistic not in ("mean", "median") and "does not play" in p.note for p in YARDSTICK.published)


def test_the_data_folder_says_where_each_number_comes_from_and_ships_the_licence():
    sources = (DATA / "SOURCES.md").read_text(encoding="utf-8")
    for needed in ("shafir_tversky_1992_triads.csv", "LICENSE-humanstudy-bench", "study_010", "p. 455", "p. 452", "Left out"):
        assert needed in sources, needed
    licence = (DATA / "LICENSE-humanstudy-bench").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Permission is hereby granted" in licence


def _first_choices(first, second, games: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """The ``cooperate`` values noted in ``games`` one-shot games (both seats), with each one's game."""
    game = PrisonersDilemma(PrisonersDilemmaConfig(), Prompts(PrisonersDilemma.prompt_dir))

    async def all_games() -> tuple[list[float], list[int]]:
        values, clusters = [], []
        for seed in range(games):
            table = Table({"player_1": first(), "player_2": second()}, seed=seed)
            await game.play(table)
            for t in table.turns:
                if t.metrics.get("round") == 1:
                    values.append(t.metrics["cooperate"])
                    clusters.append(seed)
        return values, clusters

    values, clusters = asyncio.run(all_games())
    return np.asarray(values), np.asarray(clusters)


@pytest.fixture(scope="module")
def resampled() -> tuple[np.ndarray, np.ndarray]:
    values, clusters = _first_choices(HumanResampler, HumanResampler)
    assert len(values) == 600
    return values, clusters


def test_the_human_resampler_cooperates_like_people(resampled):
    values, clusters = resampled
    assert abs(values.mean() - 164 / 444) < 0.06  # 600 draws of a 36.9 % chance
    like = turing(unknown_sample(), values, YARDSTICK.measure("cooperate"), clusters=clusters)
    assert like.likeness_ci[0] <= 0.5 <= like.likeness_ci[1], like


def test_always_cooperating_is_unlike_people_and_always_defecting_is_their_mode():
    """Two bins with human shares 280/444 (defect) and 164/444 (cooperate): a cooperating choice
    lands in the sparser bin, so it never wins and ties only the 36.9 % of people who cooperated:
    likeness = ½ · 164/444 = 0.185, its whole interval below ½. A defecting choice lands in the
    people's mode: it wins against every person who cooperated and ties the rest, likeness =
    164/444 + ½ · 280/444 = 0.685."""
    measure = YARDSTICK.measure("cooperate")
    values, clusters = _first_choices(AlwaysCooperate, AlwaysCooperate, games=50)
    always = turing(unknown_sample(), values, measure, clusters=clusters)
    assert always.win == 0.0 and always.likeness == pytest.approx(0.5 * 164 / 444) and always.likeness_ci[1] < 0.5, always
    values, clusters = _first_choices(Selfish, Selfish, games=50)
    never = turing(unknown_sample(), values, measure, clusters=clusters)
    assert never.likeness == pytest.approx(164 / 444 + 0.5 * 280 / 444) and never.likeness_ci[0] > 0.5, never
