"""People as the yardstick, the generic part: the behavioural Turing score computed exactly, its
intervals, the comparison table of a game's stored decisions with human data, and its place in
reports and profiles (a yardstick registered for the ultimatum game in these tests only)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from agorabench import families
from agorabench.analysis import likeness, profile
from agorabench.analysis.yardstick import (bin_shares, counted, HumanSample, human_baseline, Measure, Published, REFERENCE, Source, turing, turing_shares, Yardstick)
from support.helpers import agora
from support.studies import study_toml

SOURCE = Source("made-up", "Made-up people (test data)", "this test", "test data")
#: People who mostly offer 40–49 % and some 50 %.
PEOPLE = HumanSample("offer_share", (0.1, 0.3, 0.4, 0.45, 0.5), (5, 10, 40, 25, 20), SOURCE, "round 1")
OFFER = Measure("offer_share", "offer / pie", "offer", "offer_share", where={"round": 1})


def test_turing_shares_are_the_exact_pairwise_probabilities():
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.0, 0.0, 1.0])  # always the sparsest bin: never denser than the human's
    win, tie, lose = turing_shares(p, q)
    assert (win, tie) == (0.0, pytest.approx(0.2)) and lose == pytest.approx(0.8)
    q = np.array([1.0, 0.0, 0.0])  # always the densest bin: wins against every other bin
    assert turing_shares(p, q) == pytest.approx((0.5, 0.5, 0.0))
    # against itself, win and lose are equal (the human baseline) and likeness is 0.5
    win, tie, lose = turing_shares(p, p)
    assert win == pytest.approx(lose) and win + tie / 2 == pytest.approx(0.5)
    # brute force over pairs agrees
    rng = np.random.default_rng(1)
    h, m = rng.choice(3, 20000, p=p), rng.choice(3, 20000, p=[0.2, 0.5, 0.3])
    brute = np.mean(p[m] > p[h]), np.mean(p[m] == p[h])
    assert turing_shares(p, np.array([0.2, 0.5, 0.3]))[:2] == pytest.approx(brute, abs=0.01)


def test_bins_follow_mei_et_al_the_top_value_in_the_last_bin():
    assert list(bin_shares(np.array([0.0, 0.05, 0.1, 0.99, 1.0]), None, 0.0, 1.0, 10)) == [0.4, 0.2, 0, 0, 0, 0, 0, 0, 0, 0.4]


def test_people_drawn_from_the_data_tie_and_a_constant_far_from_them_loses():
    rng = random.Random(3)
    drawn = np.array([PEOPLE.draw(rng) for _ in range(400)])
    score = turing(PEOPLE, drawn, OFFER)
    assert score.likeness_ci[0] < 0.5 < score.likeness_ci[1]
    far = turing(PEOPLE, np.full(50, 0.9), OFFER)
    assert far.likeness_ci[1] < 0.5 and far.lose > 0.9
    base = human_baseline(PEOPLE, OFFER)
    assert base.likeness == pytest.approx(0.5) and base.win == pytest.approx(base.lose)


def test_clustered_intervals_are_wider_than_independent_ones():
    values = np.repeat(np.linspace(0, 1, 20), 10)  # 20 games, 10 equal decisions each
    alone = turing(PEOPLE, values, OFFER)
    clustered = turing(PEOPLE, values, OFFER, clusters=np.repeat(np.arange(20), 10))
    assert clustered.win == alone.win
    assert clustered.win_ci[1] - clustered.win_ci[0] > 1.5 * (alone.win_ci[1] - alone.win_ci[0])


def test_sample_statistics():
    values, counts = counted([0.5, 0.2, 0.5, 0.0])
    sample = HumanSample("x", values, counts, SOURCE, "")
    assert (values, counts) == ((0.0, 0.2, 0.5), (1, 1, 2))
    assert sample.n == 4 and sample.mean() == pytest.approx(0.3) and sample.median() == pytest.approx(0.35)
    assert sample.share(lambda v: v == 0.5) == 0.5
    with pytest.raises(ValueError, match="equally long"):
        HumanSample("x", (1.0,), (), SOURCE, "")
    with pytest.raises(ValueError, match="empty"):
        Measure("x", "x", "p", "x", lo=1, hi=1)
    with pytest.raises(ValueError, match="unknown measures"):
        Yardstick("g", (OFFER,), published=(Published("nope", "mean", 0.3, 10, SOURCE, ""),))


def _turns(model: str, values: list[float], phase: str = "offer", **columns) -> pd.DataFrame:
    return pd.DataFrame({"game_id": [f"{model}-{i}" for i in range(len(values))], "model": model, "phase": phase, "valid": True, "offer_share": values, "round": 1, **columns})


def test_compare_reads_valid_decisions_of_the_phase_and_conditions():
    stick = Yardstick("ultimatum", (OFFER,), lambda: (PEOPLE, HumanSample("offer_share", (0.5,), (10,), SOURCE, "pie 10 only", where={"pie": 10})))
    turns = pd.concat([
        _turns("a", [0.4, 0.45, 0.5, 0.4], pie=100),
        _turns("b", [0.9] * 6, pie=100),
        _turns("b", [0.1], phase="respond", pie=100),  # another phase: not an offer
        _turns("c", [0.5], pie=100).assign(valid=False),  # invalid: never counts
        _turns("a", [0.4], pie=100).assign(round=2),  # not round 1
    ], ignore_index=True)
    table = likeness.compare(stick, turns)
    assert list(table["who"]) == [REFERENCE, "a", "b"]  # no pie-10 games: the second sample gives no rows
    a, b = table.iloc[1], table.iloc[2]
    assert a["decisions"] == 4 and a["mean"] == pytest.approx(0.4375) and b["decisions"] == 6
    assert a["likeness"] > b["likeness"] and b["lose"] > 0.9
    assert table.iloc[0]["likeness"] == pytest.approx(0.5)
    grid = likeness.comparison_grid(table)
    assert grid.loc[0, "W1"] == "–" and "[" in grid.loc[1, "likeness"]


def test_numbers_of_a_condition_match_within_a_thousandth():
    column = pd.Series([0.6666666666666666, 0.667, 0.5])
    assert list(likeness._matches(column, 2 / 3)) == [True, True, False]


@pytest.fixture
def ultimatum_people(monkeypatch):
    """The ultimatum game with made-up human data, registered for one test."""
    every_round = Measure("offer_share", "offer / pie", "offer", "offer_share")
    stick = Yardstick("ultimatum", (every_round,), lambda: (PEOPLE,), (Published("offer_share", "mean", 0.41, 99, SOURCE, "round 1"),))
    real = families.references
    monkeypatch.setattr(likeness, "references", lambda game: stick if game == "ultimatum" else real(game))
    return stick


def test_a_report_and_a_profile_put_models_beside_people(ultimatum_people, tmp_path, capsys):
    study = tmp_path / "u.toml"
    study.write_text(study_toml("u", game="ultimatum", matchups="same_model", repeats=6, fixed={"pie": 10, "rounds": 1}, models=[{"name": "fair", "spec": "strategy/fair"}, {"name": "spe", "spec": "strategy/subgame-perfect"}]))
    db = tmp_path / "u.db"
    assert agora(capsys, "run", str(study), "--db", str(db))[0] == 0
    rc, _, err = agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "People as the yardstick: ultimatum" in page and "Turing win" in page and "likeness" in page
    table = pd.read_csv(tmp_path / "rep" / "ultimatum-against-people.csv")
    assert list(table["who"]) == [REFERENCE, "fair", "spe"]
    fair, spe = table.iloc[1], table.iloc[2]
    assert fair["decisions"] == spe["decisions"] == 6
    assert fair["mean"].startswith("0.500") and spe["mean"].startswith("0.100")
    published = pd.read_csv(tmp_path / "rep" / "ultimatum-published-human-values.csv")
    assert published.loc[0, "fair"] == pytest.approx(0.5) and published.loc[0, "n"] == 99
    sources = pd.read_csv(tmp_path / "rep" / "ultimatum-human-data-sources.csv")
    assert list(sources["source"]) == ["made-up"]
    rc, _, err = agora(capsys, "profile", str(db), "--out", str(tmp_path / "prof"))
    assert rc == 0, err
    rows = pd.read_csv(tmp_path / "prof" / "profile.csv")
    like = rows[rows["family"] == profile.LIKENESS_FAMILY]
    across = like[like["measure"] == profile.ACROSS].set_index("model")
    assert set(across.index) == {"fair", "spe", REFERENCE} and across.loc[REFERENCE, "kind"] == "reference"
    per = like[like["measure"] == "ultimatum: offer_share (made-up)"].set_index("model")
    assert across.loc["fair", "estimate"] == pytest.approx(per.loc["fair", "estimate"])
    assert per.loc["fair", "estimate"] > per.loc["spe", "estimate"]
    assert "human-likeness" in (tmp_path / "prof" / "profile.html").read_text(encoding="utf-8")


def test_a_published_share_stands_beside_each_models_share_of_the_same_decisions():
    stick = Yardstick("ultimatum", (OFFER,), published=(
        Published("offer_share", "share offering half or more", 0.65, 43, SOURCE, "round 1", test=lambda v: v >= 0.5),
        Published("offer_share", "mode", 0.5, 43, SOURCE, "round 1"),
    ))
    turns = pd.concat([_turns("a", [0.5, 0.6, 0.1, 0.2]), _turns("b", [0.1] * 3)], ignore_index=True)
    table = likeness.published_table(stick, turns)
    assert list(table.loc[0, ["a", "b"]]) == [0.5, 0.0]
    assert pd.isna(table.loc[1, "a"])  # a statistic without its test: people only


def test_published_values_of_conditions_not_played_are_set_apart():
    stick = Yardstick("ultimatum", (OFFER,), published=(
        Published("offer_share", "mean", 0.4, 10, SOURCE, "pie 100", where={"pie": 100}),
        Published("offer_share", "mean", 0.3, 10, SOURCE, "pie 5", where={"pie": 5}),
    ))
    turns = _turns("a", [0.5, 0.4], pie=100)
    assert list(likeness.published_table(stick, turns, applying=True)["condition"]) == ["pie 100"]
    assert list(likeness.published_table(stick, turns, applying=False)["condition"]) == ["pie 5"]
    assert len(likeness.published_table(stick, turns)) == 2


def test_the_labs_own_people_stand_beside_the_published_ones(tmp_path, capsys):
    """A served dictator study: 12 people (each drawing their gift from MobLab's people, as the
    human-resampler does) and a selfish dictator's games. The report's comparison has one pooled
    `human` row, of kind people, one decision and one cluster per participant, whose likeness
    interval holds 0.5 — beside the reference row and the selfish one."""
    import asyncio

    from agorabench.core.runner import Runner
    from agorabench.core.study import load_study
    from agorabench.store.store import Store
    from agorabench.web.play import Manager
    from support.people import Person, play_person
    from support.web import study_text

    people = 12
    text = study_text("served", "dictator", [{"dictator": "participant", "recipient": "selfish"}, {"dictator": "selfish", "recipient": "selfish"}], {"endowment": 100}, [{"name": "selfish", "spec": "strategy/selfish"}])
    path = tmp_path / "served.toml"
    path.write_text(text.replace("seed = 0\n", f"seed = 0\nrepeats = {people}\n", 1), encoding="utf-8")
    db = tmp_path / "served.db"
    resampler = families.strategies("dictator")["human-resampler"]()

    async def go() -> None:
        store = Store(db)
        study = load_study(path)
        manager = Manager(study, store)
        try:
            for i in range(people):
                await play_person(manager, Person(pid=f"P{i:03d}X", attention_answer="Blue"), i, decide=resampler.decide)
            await Runner(study, store, progress=False).run()
        finally:
            await manager.stop()
            store.dispose()

    asyncio.run(go())
    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    table = pd.read_csv(tmp_path / "rep" / "dictator-against-people.csv").set_index("who")
    assert list(table.index) == [REFERENCE, "human", "selfish"]
    assert table.loc["human", "decisions"] == people
    from agorabench.analysis.frames import turns_df

    store = Store(str(db), read_only=True)
    try:
        raw = likeness.compare(families.references("dictator"), turns_df(store, "served", transcripts=False)).set_index("who")
    finally:
        store.dispose()
    assert raw.loc["human", "kind"] == "people" and raw.loc["human", "clusters"] == people
    assert raw.loc["human", "likeness_low"] < 0.5 < raw.loc["human", "likeness_high"]
