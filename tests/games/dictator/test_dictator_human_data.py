"""The dictator game's human reference data: the shipped MobLab file is the one SOURCES.md
describes and reproduces the published numbers; the Forsythe et al. offers as transcribed
reproduce what the paper's text says of them; the yardstick is wired to the game's turns; and
the behavioural Turing score tells the human resampler from a strategy that gives everything."""

from __future__ import annotations

import asyncio
import gzip
import hashlib

import numpy as np
import pytest

from agorabench import families
from agorabench.analysis.likeness import compare, published_table
from agorabench.analysis.yardstick import turing
from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.dictator import humans
from agorabench.games.dictator.dictator import Dictator, DictatorConfig
from agorabench.games.dictator.strategies import Altruist, HumanResampler

SOURCES = humans.DATA / "SOURCES.md"


def test_the_yardstick_sample_reproduces_the_published_moblab_numbers():
    sample = humans.moblab_sample()
    assert sample.n == 13_232
    assert sample.mean() == pytest.approx(0.2586, abs=5e-5)
    assert round(sample.mean() * 100, 1) == 25.9
    assert round(sample.share(lambda v: v == 0) * 100, 1) == 26.1
    assert round(sample.share(lambda v: np.isclose(v, 0.5)) * 100, 1) == 19.4
    assert min(sample.values) == 0.0 and max(sample.values) <= 1.0
    assert sample.measure == "given_share" and sample.where == {"framing": "anonymous"}
    assert families.references("dictator").samples == (sample,)


def test_the_shipped_file_keeps_every_row_and_is_the_one_sources_md_describes():
    raw = gzip.decompress(humans.MOBLAB_FILE.read_bytes())
    text = SOURCES.read_text(encoding="utf-8")
    assert hashlib.sha256(raw).hexdigest() in text
    assert "f9f8d94ce13963646adc5afc192e0e9f5945c893b4527ed0e9c3d5585a9aeeb8" in text  # the original CSV
    rows = humans.moblab_rows()
    assert len(rows) == 45_625 and list(rows[0]) == ["participant", "role", "round", "total", "move"]
    assert {r["role"] for r in rows} == {"first", "second"}
    assert all((r["move"] == "") == (r["role"] == "second") for r in rows)
    ids = [int(r["participant"]) for r in rows]
    assert max(ids) == 17_902 and len(set(ids)) == 17_902
    firsts = list(dict.fromkeys(ids))
    assert firsts == list(range(1, 17_903))  # numbered in order of first appearance
    licence = (humans.DATA / "LICENSE-moblab").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Copyright (c) 2023 Yutong Xie" in licence


def test_other_pies_and_rounds_are_offered_too():
    later = humans.moblab_sample(100, 2)
    assert later.n == len(humans.moblab_decisions(100, 2)) > 1000 and later.condition.endswith("round 2, a pie of 100 points")
    ten = humans.moblab_sample(10, 1)
    assert all(0 <= v <= 1 for v in ten.values) and ten.n > 100
    with pytest.raises(ValueError, match="no share"):
        humans.moblab_sample(0, 1)
    with pytest.raises(ValueError, match="no dictator decision"):
        humans.moblab_sample(100, 99)


def test_the_forsythe_offers_reproduce_the_papers_own_counts_and_shares():
    offers = humans.forsythe_offers()
    assert [len(s) for s in humans.FORSYTHE_OFFERS.values()] == [21, 24]  # Table I's sample sizes
    assert len(offers) == 45
    assert round(sum(o == 0 for o in offers) / 45 * 100) == 36  # p. 362: 36 % pure gamesmen
    assert round(sum(o >= 2.5 for o in offers) / 45 * 100) == 22  # p. 362: 22 % an equal share or better
    assert sum(offers) == 50.0
    published = {p.statistic: p for p in families.references("dictator").published}
    assert set(published) == {"mean", "share giving 0", "share giving half or more"}
    assert published["mean"].value == pytest.approx(50 / 45 / 5) and published["mean"].n == 45
    assert published["share giving 0"].value == 0.36 and published["share giving half or more"].value == 0.22
    assert all(p.source.key == "Forsythe et al. 1994" and p.where == {"framing": "anonymous"} for p in published.values())


def test_sources_md_names_each_source_licence_and_what_was_left_out():
    text = SOURCES.read_text(encoding="utf-8")
    for needed in ("yutxie/ChatGPT-Behavioral", "69ec5575efc373382de5bfc6e457667c2d0b3e60", "MIT", "13,232", "e2313925121",
                   "HumanStudy-Bench", "study_011", "Engel", "left out", "1.09"):
        assert needed in text, needed


def _decisions(strategy, games: int = 300, **config) -> tuple[np.ndarray, list]:
    """The noted first-round shares of ``games`` one-round games (seeds 1..games), and the turns."""
    game = Dictator(DictatorConfig(**config), Prompts(Dictator.prompt_dir))
    values, turns = [], []
    for seed in range(1, games + 1):
        table = Table({"dictator": strategy}, seed=seed)
        asyncio.run(game.play(table))
        for t in table.turns:
            turns.append((seed, t))
            if t.valid and t.metrics.get("round") == 1:
                values.append(t.metrics["given_share"])
    return np.asarray(values), turns


def test_the_resampler_is_as_human_as_people_and_giving_everything_is_not():
    stick = families.references("dictator")
    measure, sample = stick.measures[0], stick.samples[0]
    like, _ = _decisions(HumanResampler())
    assert len(like) == 300
    score = turing(sample, like, measure)
    assert score.likeness_ci[0] < 0.5 < score.likeness_ci[1], score
    everything, _ = _decisions(Altruist(share=1.0))
    assert set(everything) == {1.0}
    far = turing(sample, everything, measure)
    assert far.likeness_ci[1] < 0.5, far


def test_the_comparison_reads_the_games_turns_frame():
    """The yardstick selects valid first-round turns of the anonymous framing by their noted share."""
    import pandas as pd

    rows = []
    for framing in ("anonymous", "observed"):
        for model, strategy in (("resampler", HumanResampler()), ("all", Altruist(share=1.0))):
            _, turns = _decisions(strategy, games=40, framing=framing, rounds=2)
            rows += [{"game_id": f"{framing}-{model}-{seed}", "model": model, "phase": t.phase, "valid": t.valid, "framing": framing, **t.metrics} for seed, t in turns]
    frame = pd.DataFrame(rows)
    stick = families.references("dictator")
    table = compare(stick, frame).set_index("who")
    assert table.loc["resampler", "decisions"] == 40 and table.loc["all", "decisions"] == 40  # round 1, anonymous only
    assert table.loc["all", "mean"] == 1.0 and table.loc["all", "likeness"] < table.loc["resampler", "likeness"]
    published = published_table(stick, frame).set_index("statistic")
    assert published.loc["mean", "all"] == 1.0 and math_close(published.loc["mean", "people (published)"], 50 / 225)


def math_close(a: float, b: float) -> bool:
    return abs(a - b) < 1e-12
