"""The ultimatum game's human reference data: the shipped MobLab file is the one SOURCES.md
describes and its readers give the numbers stated there; the Forsythe et al. offers as
transcribed give what the paper's text says of them; the published values carry their source and
n; the yardstick reads the game's turns; and the behavioural Turing score tells the human
resampler from the selfish player, for offers and for minimums."""

from __future__ import annotations

import asyncio
import gzip
import hashlib

import numpy as np
import pandas as pd
import pytest

from agorabench import families
from agorabench.analysis.likeness import compare, published_table
from agorabench.analysis.yardstick import turing
from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.ultimatum import humans
from agorabench.games.ultimatum.strategies import HumanResampler, SubgamePerfect
from agorabench.games.ultimatum.ultimatum import Ultimatum, UltimatumConfig

SOURCES = humans.DATA / "SOURCES.md"
THRESHOLDS = (10, 20, 30, 40, 50)


def test_the_rows_as_they_are_give_the_stated_round_one_numbers():
    """Round 1 over 100 points, the -1 marks of missing answers counted as numbers."""
    rows = humans.moblab_round(100, 1)
    assert len(rows) == 6_296
    assert sum(p for p, _ in rows) / len(rows) / 100 == pytest.approx(0.42474, abs=5e-6)
    above = [sum(a > x for _, a in rows) / len(rows) for x in THRESHOLDS]
    assert [round(s, 3) for s in above] == [0.764, 0.700, 0.578, 0.383, 0.077]
    assert [round(s * 100) for s in above] == [76, 70, 58, 38, 8]
    assert sum(p == humans.MISSING for p, _ in rows) == 249 and sum(a == humans.MISSING for _, a in rows) == 303


def test_the_yardstick_samples_leave_out_missing_answers_as_mei_et_al_do():
    offers, minimums = humans.moblab_sample("offer_share"), humans.moblab_sample("min_share")
    assert offers.n == minimums.n == len(humans.moblab_decisions()) == 5_993 == 6_296 - 303
    assert offers.mean() == pytest.approx(0.4426, abs=5e-5) and offers.median() == 0.49
    assert minimums.mean() == pytest.approx(0.3430, abs=5e-5) and minimums.median() == 0.40
    assert [round(minimums.share(lambda v, x=x: v > x / 100), 3) for x in THRESHOLDS] == [0.803, 0.735, 0.607, 0.403, 0.080]
    assert round(offers.share(lambda v: np.isclose(v, 0.5)) * 100, 1) == 28.3
    assert round(minimums.share(lambda v: v == 0) * 100, 1) == 4.9 and round(minimums.share(lambda v: np.isclose(v, 0.5)) * 100, 1) == 20.5
    for sample in (offers, minimums):
        assert min(sample.values) >= 0.0 and max(sample.values) <= 1.0 and sample.where == {}
    assert families.references("ultimatum").samples == (offers, minimums)
    assert humans.moblab_sample("offer_share", 100, 2).n == 37 - sum(1 for p, a in humans.moblab_round(100, 2) if min(p, a) < 0)
    with pytest.raises(ValueError, match="no sample"):
        humans.moblab_sample("accepted")
    with pytest.raises(ValueError, match="no ultimatum decision"):
        humans.moblab_sample("offer_share", 10, 1)


def test_the_shipped_file_keeps_every_row_and_is_the_one_sources_md_describes():
    raw = gzip.decompress(humans.MOBLAB_FILE.read_bytes())
    text = SOURCES.read_text(encoding="utf-8")
    assert hashlib.sha256(raw).hexdigest() in text
    assert "0e4fbc1b1b210d019c839d4e6a78a4458c3d56ef50f813639ba4b6a9af119b86" in text  # the original CSV
    rows = humans.moblab_rows()
    assert len(rows) == 6_417 and list(rows[0]) == ["participant", "round", "total", "propose", "accept"]
    assert {r["total"] for r in rows} == {"100"}
    assert pd.Series([r["round"] for r in rows]).value_counts().to_dict() == {"1": 6_296, "2": 37, "3": 37, "4": 30, "5": 17}
    assert all(-1 <= int(r[k]) <= 100 for r in rows for k in ("propose", "accept"))
    ids = [int(r["participant"]) for r in rows]
    assert list(dict.fromkeys(ids)) == list(range(1, 5_427))  # numbered in order of first appearance
    licence = (humans.DATA / "LICENSE-moblab").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Copyright (c) 2023 Yutong Xie" in licence


def test_the_forsythe_offers_reproduce_the_papers_own_counts_and_shares():
    offers = humans.forsythe_offers()
    assert [len(s) for s in humans.FORSYTHE_OFFERS.values()] == [20, 23]  # Table I's sample sizes
    amounts = [o for o, _ in offers]
    assert min(amounts) > 0  # p. 362: no pure gamesmen
    assert round(sum(o >= 2.5 for o in amounts) / 43 * 100) == 65  # p. 362: 65 % an equal share or more
    assert sum(amounts) == 97.75 and sum(r for _, r in offers) == 3


def test_the_published_values_carry_their_source_and_n():
    published = {(p.source.key, p.measure, p.statistic): p for p in families.references("ultimatum").published}
    assert set(published) == {
        ("Forsythe et al. 1994", "offer_share", "mean"), ("Forsythe et al. 1994", "offer_share", "share offering 0"),
        ("Forsythe et al. 1994", "offer_share", "share offering half or more"), ("Forsythe et al. 1994", "accepted", "mean"),
        ("Oosterbeek et al. 2004", "offer_share", "mean"), ("Oosterbeek et al. 2004", "accepted", "mean"),
    }
    assert published["Forsythe et al. 1994", "offer_share", "mean"].value == pytest.approx(97.75 / 43 / 5)
    assert published["Forsythe et al. 1994", "accepted", "mean"].value == pytest.approx(40 / 43)
    assert published["Forsythe et al. 1994", "offer_share", "share offering half or more"].value == 0.65
    assert all(p.n == 43 for k, p in published.items() if k[0] == "Forsythe et al. 1994")
    assert published["Oosterbeek et al. 2004", "offer_share", "mean"].value == 0.40
    assert published["Oosterbeek et al. 2004", "accepted", "mean"].value == 0.84
    assert all(p.n is None for k, p in published.items() if k[0] == "Oosterbeek et al. 2004")


def test_sources_md_names_each_source_licence_and_what_was_left_out():
    text = SOURCES.read_text(encoding="utf-8")
    for needed in ("yutxie/ChatGPT-Behavioral", "69ec5575efc373382de5bfc6e457667c2d0b3e60", "MIT", "6,296", "5,993", "e2313925121",
                   "plot.ipynb", "HumanStudy-Bench", "study_011", "Left out", "2.33", "Oosterbeek", "75 results", "16 %"):
        assert needed in text, needed


PROMPTS = Prompts(Ultimatum.prompt_dir)


def _decisions(proposer, responder, games: int = 300, **config) -> tuple[dict[str, np.ndarray], list]:
    """The noted first-round offer and minimum shares of ``games`` games (seeds 1..games), and the turns."""
    game = Ultimatum(UltimatumConfig(**config), PROMPTS)
    values: dict[str, list[float]] = {"offer_share": [], "min_share": []}
    turns = []
    for seed in range(1, games + 1):
        table = Table({"proposer": proposer, "responder": responder}, seed=seed)
        asyncio.run(game.play(table))
        for t in table.turns:
            turns.append((seed, t))
            for name in values:
                if t.valid and t.metrics.get("round") == 1 and name in t.metrics:
                    values[name].append(t.metrics[name])
    return {k: np.asarray(v) for k, v in values.items()}, turns


def test_the_resampler_is_as_human_as_people_and_the_selfish_player_is_not():
    stick = families.references("ultimatum")
    like, _ = _decisions(HumanResampler(), HumanResampler(), method="strategy")
    selfish, _ = _decisions(SubgamePerfect(), SubgamePerfect(), method="strategy")
    for measure in ("offer_share", "min_share"):
        sample = stick.samples_of(measure)[0]
        assert len(like[measure]) == 300
        score = turing(sample, like[measure], stick.measure(measure))
        assert score.likeness_ci[0] < 0.5 < score.likeness_ci[1], (measure, score)
        assert set(selfish[measure]) == {0.01}
        far = turing(sample, selfish[measure], stick.measure(measure))
        assert far.likeness_ci[1] < 0.5, (measure, far)


def test_the_comparison_reads_the_games_turns_frame():
    """Offers are compared under both methods, minimums under the strategy method, direct answers
    only beside the published acceptance rates; every measure reads round 1 only."""
    rows = []
    for method in ("direct", "strategy"):
        for model, (p, r) in (("resampler", (HumanResampler(), HumanResampler())), ("selfish", (SubgamePerfect(), SubgamePerfect()))):
            _, turns = _decisions(p, r, games=30, method=method, rounds=2)
            rows += [{"game_id": f"{method}-{model}-{seed}", "model": model, "phase": t.phase, "valid": t.valid, **t.metrics} for seed, t in turns]
    frame = pd.DataFrame(rows)
    stick = families.references("ultimatum")
    table = compare(stick, frame).set_index(["measure", "who"])
    assert table.loc[("offer_share", "resampler"), "decisions"] == 60 and table.loc[("min_share", "resampler"), "decisions"] == 30
    assert table.loc[("min_share", "selfish"), "mean"] == pytest.approx(0.01)
    assert table.loc[("min_share", "selfish"), "likeness"] < table.loc[("min_share", "resampler"), "likeness"]
    assert "accepted" not in table.index.get_level_values("measure")  # no human sample of it
    published = published_table(stick, frame)
    accepted = published[published["measure"] == "accepted"].set_index("source")
    assert accepted.loc["Oosterbeek et al. 2004", "selfish"] == 1.0 and accepted.loc["Oosterbeek et al. 2004", "people (published)"] == 0.84
    offers = published[(published["measure"] == "offer_share") & (published["statistic"] == "mean")].set_index("source")
    assert offers.loc["Forsythe et al. 1994", "selfish"] == pytest.approx(0.01)
