"""The public goods game's human reference data: the shipped C-experiment file of Fischbacher &
Gächter (2010) is the one SOURCES.md describes, holds their design (140 subjects, ten periods,
groups of four re-drawn every period) and reproduces the regression coefficients the authors'
own analysis file prints; its readers give the numbers SOURCES.md states; the yardstick is
registered and compares only games of that design; the human resampler draws each round from
the matching period; and the behavioural Turing score tells the resampler from a constant
contribution far from people's usual ones."""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from agorabench import families
from agorabench.analysis.likeness import compare
from agorabench.analysis.yardstick import bin_shares, turing
from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.public_goods import humans
from agorabench.games.public_goods.public_goods import PublicGoods, PublicGoodsConfig
from agorabench.games.public_goods.strategies import Conditional, HumanResampler, Selfish

SOURCES = humans.DATA / "SOURCES.md"
#: The mean contribution (tokens) of each period as SOURCES.md states it.
PERIOD_MEANS = (7.893, 7.743, 6.257, 5.343, 4.800, 4.050, 3.807, 3.421, 2.750, 2.236)


def _frame() -> pd.DataFrame:
    frame = pd.DataFrame(humans.fg2010_rows())
    for column in ("subject", "session", "group", "period", "contribution", "others", "belief", "predicted"):
        frame[column] = frame[column].astype(int)
    return frame


def _ols(y: pd.Series, *xs: pd.Series) -> list[float]:
    """Least-squares coefficients of y on xs and a constant (the constant last)."""
    design = np.column_stack([*(x.to_numpy(dtype=float) for x in xs), np.ones(len(y))])
    return [float(b) for b in np.linalg.lstsq(design, y.to_numpy(dtype=float), rcond=None)[0]]


def test_the_shipped_file_is_the_one_sources_md_describes():
    text = SOURCES.read_text(encoding="utf-8")
    assert hashlib.sha256(humans.FG2010_FILE.read_bytes()).hexdigest() in text
    assert "74ed905909518e0f9f3d75ebbbdde53dc55cc277a82a45a42d290d7909e67e86" in text  # the authors' .dta
    rows = humans.fg2010_rows()
    assert len(rows) == 1_400 and list(rows[0]) == ["subject", "session", "group", "period", "order", "contribution", "others", "belief", "predicted"]
    licence = (humans.DATA / "LICENSE-aea").read_text(encoding="utf-8")
    assert "Creative Commons Attribution 4.0 International Public License" in licence and licence.startswith("Modified BSD License")


def test_the_file_holds_the_c_experiments_design():
    """140 subjects in six sessions, each deciding in every one of ten periods, in groups of four
    that are re-drawn every period; ``others`` is the rounded mean of the three others."""
    f = _frame()
    assert f["subject"].nunique() == 140 and (f.groupby("subject")["period"].apply(sorted) == [list(range(1, 11))] * 140).all()
    per_session = f[f["period"] == 1].groupby("session").size().to_dict()
    assert per_session == {1: 24, 2: 24, 3: 20, 4: 24, 5: 24, 6: 24}
    assert (f.groupby(["session", "period", "group"]).size() == humans.FG2010_PLAYERS).all()
    groups = f.pivot_table(index="subject", columns="period", values="group")
    assert (groups.nunique(axis=1) > 1).mean() > 0.9  # not fixed groups: most subjects change group
    total = f.groupby(["session", "period", "group"])["contribution"].transform("sum")
    assert (np.floor((total - f["contribution"]) / 3 + 0.5) == f["others"]).all()
    assert f[["contribution", "others", "belief", "predicted"]].isin(range(0, 21)).all().all()
    assert Counter(r["order"] for r in humans.fg2010_rows() if r["period"] == "1") == {"PC": 72, "CP": 68}


def test_the_data_reproduce_the_coefficients_the_authors_analysis_prints():
    """The authors' do-file (web appendix) simulates with the coefficients of its regressions:
    contribution = 0.242 · predicted contribution + 0.666 · belief − 0.473 (N = 1,400; also
    column (1) of sbordt/PublicGoodsHeterogeneity's outreg/FG2010.tex) and belief = 0.415 ·
    others' contribution last period + 0.569 · belief last period + 0.118."""
    f = _frame().sort_values(["subject", "period"])
    assert [round(b, 3) for b in _ols(f["contribution"], f["predicted"], f["belief"])] == [0.242, 0.666, -0.473]
    f["last_others"] = f.groupby("subject")["others"].shift()
    f["last_belief"] = f.groupby("subject")["belief"].shift()
    lagged = f.dropna(subset=["last_others", "last_belief"])
    assert len(lagged) == 1_260
    assert [round(b, 3) for b in _ols(lagged["belief"], lagged["last_others"], lagged["last_belief"])] == [0.415, 0.569, 0.118]


def test_the_readers_give_the_numbers_sources_md_states():
    first = humans.fg2010_contributions(1)
    assert len(first) == 140 and sum(first) == 1_105  # 7.893 tokens on average
    assert Counter(first)[0] == 33 and Counter(first)[20] == 18
    sample = humans.fg2010_sample(1)
    assert sample.n == 140 and sample.mean() == pytest.approx(1_105 / 140 / 20) and round(sample.mean(), 4) == 0.3946
    assert sample.median() == 0.4 and min(sample.values) == 0.0 and max(sample.values) == 1.0
    assert [round(c * 140) for c in bin_shares(*sample.array(), 0.0, 1.0, 10)] == [40, 13, 11, 4, 14, 18, 5, 11, 3, 21]
    assert [round(sum(humans.fg2010_contributions(p)) / 140, 3) for p in range(1, 11)] == list(PERIOD_MEANS)
    text = SOURCES.read_text(encoding="utf-8")
    for needed in ("7.893", "0.3946", "2.236", "0.1118", "33", "18", "72", "68"):
        assert needed in text, needed
    with pytest.raises(ValueError, match="periods 1–10"):
        humans.fg2010_contributions(11)


def test_the_yardstick_is_registered_and_declares_only_what_could_be_read():
    stick = families.references("public_goods")
    assert stick is humans.YARDSTICK and stick.game == "public_goods"
    assert [m.name for m in stick.measures] == ["contribution_share"] and stick.measure("contribution_share").where == {"round": 1}
    assert stick.samples == (humans.fg2010_sample(1),) and stick.published == ()
    assert stick.samples[0].where == {"players": 4, "mpcr": 0.4, "punishment": False}


def test_sources_md_names_the_source_licence_derivation_and_what_was_left_out():
    text = SOURCES.read_text(encoding="utf-8")
    for needed in ("sbordt/PublicGoodsHeterogeneity", "3c273f30ac59d9e518ac7376fd3a27b5d351585c", "10.3886/E112335V1", "aer_100_1_541_data.zip",
                   "AEADataEditor/aea-supplement-migration", "CC BY 4.0", "541–556", "figae_data_analysis_paper.do", "Left out",
                   "Fehr & Gächter (2000)", "Herrmann", "Ledyard", "punishment rule"):
        assert needed in text, needed


PROMPTS = Prompts(PublicGoods.prompt_dir)


def _games(players, games: int, rounds: int = 1, **config) -> tuple[dict[int, list[float]], list]:
    """The noted contribution shares by round of ``games`` games (seeds 1..games) of four seats
    played by ``players()``, and (seed, turn) pairs."""
    game = PublicGoods(PublicGoodsConfig(players=4, rounds=rounds, **config), PROMPTS)
    shares: dict[int, list[float]] = {r: [] for r in range(1, rounds + 1)}
    turns = []
    for seed in range(1, games + 1):
        table = Table({f"player_{i}": players() for i in range(1, 5)}, seed=seed)
        asyncio.run(game.play(table))
        for t in table.turns:
            turns.append((seed, t))
            if t.valid and "contribution_share" in t.metrics:
                shares[t.metrics["round"]].append(t.metrics["contribution_share"])
    return shares, turns


def test_the_resampler_draws_each_round_from_the_matching_period_and_never_punishes():
    shares, _ = _games(HumanResampler, 60, rounds=12, punishment=True)
    for r, found in shares.items():
        assert len(found) == 240 and all(0 <= s <= 1 for s in found)
        period = min(r, 10)
        assert np.mean(found) == pytest.approx(PERIOD_MEANS[period - 1] / 20, abs=0.05), r
    assert np.mean(shares[1]) > np.mean(shares[10]) + 0.15  # the decline of the experiment
    outcome = asyncio.run(PublicGoods(PublicGoodsConfig(players=4, rounds=2, punishment=True), PROMPTS).play(Table({f"player_{i}": HumanResampler() for i in range(1, 5)}, seed=3)))
    assert all(p == 0 for h in outcome["history"] for row in h["points"] for p in row)
    again = asyncio.run(PublicGoods(PublicGoodsConfig(players=4, rounds=2, punishment=True), PROMPTS).play(Table({f"player_{i}": HumanResampler() for i in range(1, 5)}, seed=3)))
    assert again == outcome  # drawn from the table's seeded rng


def test_the_resampler_is_as_human_as_people_and_a_constant_far_from_them_is_not():
    sample = humans.fg2010_sample(1)
    measure = humans.CONTRIBUTION_SHARE
    # 1,500 games: the interval is a 95 % one, and the first 300 seeds alone happen to draw the
    # modal bin a little often (likeness 0.519, interval 0.503–0.534; nine of the ten 300-game
    # blocks of seeds 1–3,000 hold 0.5).
    like, turns = _games(HumanResampler, 1_500)
    clusters = np.asarray([seed for seed, t in turns if t.valid and "contribution_share" in t.metrics])
    assert len(like[1]) == len(clusters) == 6_000
    score = turing(sample, np.asarray(like[1]), measure, clusters)
    assert score.likeness_ci[0] < 0.5 < score.likeness_ci[1], score
    far, far_turns = _games(lambda: Conditional(start=0.3), 300)  # 6 tokens, a bin that holds 4 of the 140 people
    assert set(far[1]) == {0.3}
    far_clusters = np.asarray([seed for seed, t in far_turns if t.valid and "contribution_share" in t.metrics])
    assert turing(sample, np.asarray(far[1]), measure, far_clusters).likeness_ci[1] < 0.5
    # Giving nothing is what people did most often (the bin of 0–1 tokens holds 40 of 140): the
    # selfish player's constant 0 is, in this score, more "human" than a human draw.
    nothing, _ = _games(Selfish, 50)
    assert turing(sample, np.asarray(nothing[1]), measure).likeness > 0.5


def test_the_comparison_reads_only_games_of_the_experiments_design():
    rows = []
    for name, config in (("plain", {}), ("punish", {"punishment": True}), ("mpcr", {"mpcr": 0.6})):
        _, turns = _games(HumanResampler, 20, rounds=2, **config)
        cfg = PublicGoodsConfig(players=4, rounds=2, **config)
        rows += [{"game_id": f"{name}-{seed}", "model": name, "phase": t.phase, "valid": t.valid, "players": cfg.players, "mpcr": cfg.mpcr,
                  "punishment": cfg.punishment, **t.metrics} for seed, t in turns]
    table = compare(families.references("public_goods"), pd.DataFrame(rows)).set_index("who")
    assert set(table.index) == {"plain", "human (reference)"}
    assert table.loc["plain", "decisions"] == 80  # 20 games × 4 players, round 1 only
    assert table.loc["human (reference)", "mean"] == pytest.approx(1_105 / 2_800)
    assert not math.isnan(table.loc["plain", "likeness"])
