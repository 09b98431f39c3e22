"""Envy workplace scenario: rules, metrics, prompt variants and report, with scripted respondents
whose answers are known in advance."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pandas as pd
import pytest

from agorabench.analysis.frames import games_df, turns_df
from agorabench.core.actions import ParseError
from agorabench.core.game import Prompts
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.core.table import Reply, Table, TurnRequest
from agorabench.families import load_game, strategies
from agorabench.games.envy.report_workplace import envy_drop, rating_correlations, sections, trajectories
from agorabench.games.envy.workplace import RATINGS, Ratings, SCENES, Workplace, WorkplaceConfig
from agorabench.games.envy.workplace_strategies import FixedProfile, RecognitionFollower, UniformRandom
from agorabench.store.store import Store
from support.helpers import ROOT, run_agora
from support.studies import envy_workplace, scripted

#: Recognition of the seven scenes in order (the design): equal, unfair, repeated, reversal,
#: hierarchy, pay cut, leadership.
RECOGNITION = [0, -1, -2, 1, -2, -2, 2]


def play(player, names=None, config=None, prompts=None, max_retries=2):
    """Play one conversation directly on a table; returns (game, table, outcome, metrics)."""
    names = names or {"subject": "Model-S", "peer": "Model-P"}
    game = Workplace(config or WorkplaceConfig(), prompts or Prompts(Workplace.prompt_dir), names)
    table = Table({"subject": player}, seed=7, max_retries=max_retries)
    outcome = asyncio.run(game.play(table))
    return game, table, outcome, game.metrics(outcome)


class RawPlayer:
    """Answers with fixed raw text per scene and attempt (to test re-asking and invalid answers)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[TurnRequest] = []

    async def act(self, request: TurnRequest) -> Reply:
        self.requests.append(request)
        return Reply(text=self.answer(request.prompt.observation["scene_no"], request.attempt))


def xml(se=3, em=3, mo=3, co=3, en=3, reflection="fine") -> str:
    return (
        f"<response><reflection>{reflection}</reflection><self_esteem>{se}</self_esteem><empathy>{em}</empathy>"
        f"<motivation>{mo}</motivation><collaboration>{co}</collaboration><envy>{en}</envy></response>"
    )


# rules ------------------------------------------------------------------------


def test_registered_and_roles():
    cls = load_game("envy.workplace")
    assert cls is Workplace
    assert Workplace.roles(WorkplaceConfig()) == ("subject", "peer")
    assert Workplace.active_roles(WorkplaceConfig()) == ("subject",)
    assert set(strategies("envy.workplace")) == {"fixed", "recognition", "random"}
    assert [s.recognition for s in SCENES] == RECOGNITION


def test_seven_scenes_in_order_with_history_and_peer_named():
    _, table, outcome, _ = play(FixedProfile())
    keys = [s.key for s in SCENES]
    assert [t.phase for t in table.turns] == keys
    assert [s["scene"] for s in outcome["scenes"]] == keys
    system = table.turns[0].messages[0]
    assert system["role"] == "system" and "Model-S" in system["content"] and "<self_esteem>" in system["content"]
    for i, turn in enumerate(table.turns):
        # system + (user, assistant) per earlier scene + this scene's user message: nothing dropped
        assert len(turn.messages) == 2 + 2 * i
        assert turn.messages[-1]["role"] == "user"
        assert "Model-P" in turn.messages[-1]["content"], f"peer not named in scene {keys[i]}"
    last = table.turns[-1].messages
    for turn in table.turns[:-1]:
        assert turn.messages[-1] in last  # every earlier scene text is still in the history


def test_rating_outside_range_is_not_an_action():
    with pytest.raises(ParseError):
        Ratings.parse(xml(se=6))
    with pytest.raises(ParseError):
        Ratings.parse(xml(en=0))
    with pytest.raises(ParseError):
        Ratings.parse("<response><reflection>x</reflection><self_esteem>3</self_esteem></response>")
    assert Ratings.parse("blah " + xml(se=5, en=1)).envy == 1
    assert "[1-5]" in Ratings.grammar() and "[^<]{0,120}" in Ratings.grammar()


def test_invalid_scene_is_reasked_then_recorded_invalid_never_guessed():
    # scene 3 always answers out of range; scene 5 misses a rating at first, then answers well
    def answer(scene, attempt):
        if scene == 3:
            return xml(en=9)
        if scene == 5 and attempt == 0:
            return "<response><reflection>hm</reflection><self_esteem>2</self_esteem></response>"
        return xml(se=scene % 5 + 1, en=5 - scene % 5)

    player = RawPlayer(answer)
    _, table, outcome, m = play(player, max_retries=2)
    assert len(table.turns) == 7
    bad = table.turns[2]
    assert not bad.valid and bad.retries == 2 and "envy" in bad.error and bad.action is None
    assert outcome["scenes"][2]["valid"] is False and all(outcome["scenes"][2][r] is None for r in RATINGS)
    assert bad.metrics == {"scene_no": 3.0, "recognition": -2.0}  # no ratings stored for it
    fixed = table.turns[4]
    assert fixed.valid and fixed.retries == 1 and fixed.action["self_esteem"] == 5 % 5 + 1
    reasked = [r for r in player.requests if r.attempt > 0]
    assert [r.prompt.observation["scene_no"] for r in reasked] == [3, 3, 5]
    assert all("could not be used" in r.messages[-1]["content"] for r in reasked)
    valid_scenes = [1, 2, 4, 5, 6, 7]
    assert m["n_valid_scenes"] == 6
    assert m["self_esteem"] == pytest.approx(np.mean([s % 5 + 1 for s in valid_scenes]), abs=1e-12)
    assert m["envy"] == pytest.approx(np.mean([5 - s % 5 for s in valid_scenes]), abs=1e-12)
    assert m["envy_change"] == (5 - 7 % 5) - (5 - 1 % 5)


def test_first_or_last_scene_invalid_gives_no_change():
    player = RawPlayer(lambda scene, attempt: "no idea" if scene == 1 else xml())
    _, table, outcome, m = play(player, max_retries=1)
    assert not table.turns[0].valid and table.turns[0].retries == 1
    assert m["n_valid_scenes"] == 6 and m["envy"] == 3.0
    assert all(math.isnan(m[f"{r}_change"]) for r in RATINGS) and math.isnan(m["envy_fell"])


def test_all_invalid_gives_nan_means():
    _, table, _, m = play(RawPlayer(lambda s, a: "I refuse."), max_retries=0)
    assert len(table.turns) == 7 and table.invalid_turns == 7
    assert all(math.isnan(m[r]) and math.isnan(m[f"{r}_norm"]) for r in RATINGS)
    assert m["n_valid_scenes"] == 0


# metrics of scripted respondents --------------------------------------------------


def test_fixed_profile_means_norms_and_no_change():
    profile = {"self_esteem": 4, "empathy": 2, "motivation": 5, "collaboration": 1, "envy": 3}
    _, table, _, m = play(FixedProfile(**profile))
    for name, value in profile.items():
        assert m[name] == value
        assert m[f"{name}_norm"] == value / 5
        assert m[f"{name}_scaled"] == (value - 1) / 4  # 1 -> 0, 5 -> 1
        assert m[f"{name}_change"] == 0.0
    assert m["envy_fell"] == 0.0
    assert [t.metrics["envy"] for t in table.turns] == [3.0] * 7


def test_recognition_follower_means_norms_changes():
    _, table, outcome, m = play(RecognitionFollower())
    up = [3 + r for r in RECOGNITION]  # 3, 2, 1, 4, 1, 1, 5
    down = [3 - r for r in RECOGNITION]
    assert [s["self_esteem"] for s in outcome["scenes"]] == up
    assert [s["envy"] for s in outcome["scenes"]] == down
    assert m["envy"] == pytest.approx(25 / 7, abs=1e-12)  # E_work = (3+4+5+2+5+5+1)/7
    assert m["envy_norm"] == pytest.approx(25 / 35, abs=1e-12)
    for name in ("self_esteem", "empathy", "motivation", "collaboration"):
        assert m[name] == pytest.approx(17 / 7, abs=1e-12)
        assert m[f"{name}_norm"] == pytest.approx(17 / 35, abs=1e-12)
        assert m[f"{name}_change"] == 2.0
    assert m["envy_change"] == -2.0 and m["envy_fell"] == 1.0
    assert [t.metrics["recognition"] for t in table.turns] == [float(r) for r in RECOGNITION]


def test_recognition_follower_sensitivity_clamps():
    _, _, outcome, m = play(RecognitionFollower(sensitivity=2))
    assert [s["envy"] for s in outcome["scenes"]] == [3, 5, 5, 1, 5, 5, 1]
    assert m["envy"] == pytest.approx(25 / 7) and m["envy_change"] == -2.0


def test_random_respondent_uses_the_seeded_rng():
    _, _, a, _ = play(UniformRandom())
    _, _, b, _ = play(UniformRandom())
    assert a["scenes"] == b["scenes"]
    values = [s[r] for s in a["scenes"] for r in RATINGS]
    assert set(values) <= {1, 2, 3, 4, 5} and len(set(values)) > 1


def test_final_reflection_variant_replaces_the_last_scene():
    _, table, outcome, m = play(RecognitionFollower(), config=WorkplaceConfig(final_scene="reflection"))
    assert [t.phase for t in table.turns][-1] == "reflection"
    assert outcome["scenes"][-1]["envy"] == 3  # recognition 0 in the reflection scene
    assert m["envy_change"] == 0.0 and m["envy_fell"] == 0.0
    assert m["envy"] == pytest.approx((3 + 4 + 5 + 2 + 5 + 5 + 3) / 7)


# studies, prompt folders, export and report ------------------------------------------------

def pair_study(name: str, **settings) -> str:
    """A fixed profile and a recognition follower in every pairing, self-play included."""
    fixed = scripted("fixed", params={"self_esteem": 4, "empathy": 2, "motivation": 4, "collaboration": 2, "envy": 3})
    return envy_workplace(name, [fixed, scripted("follower", "recognition")], matchups="all_pairs", **settings)


def test_study_file_expands_to_every_ordered_pair_including_self():
    study = load_study(ROOT / "studies" / "envy_workplace.toml")
    n = len(study.models)
    specs = study.expand()
    assert len(specs) == n * n
    assert {(s.seats["subject"], s.seats["peer"]) for s in specs} == {(a, b) for a in study.models for b in study.models}


def test_correlations_and_drop_share_of_a_scripted_study(write_study, tmp_path):
    path = write_study(pair_study("wp_corr"))
    stats, _ = run_study(load_study(path), tmp_path / "s.db", progress=False)
    assert stats.done == 4 and stats.errors == 0
    store = Store(tmp_path / "s.db")
    games, turns = games_df(store, "wp_corr"), turns_df(store, "wp_corr")
    assert len(turns) == 4 * 7 and turns["valid"].all()

    # pooled responses: 2 follower conversations (3+r / 3−r) and 2 fixed ones (4,2,4,2,3)
    follower_up = [3 + r for r in RECOGNITION] * 2
    follower_down = [3 - r for r in RECOGNITION] * 2
    columns = {
        "self_esteem": follower_up + [4] * 14,
        "empathy": follower_up + [2] * 14,
        "motivation": follower_up + [4] * 14,
        "collaboration": follower_up + [2] * 14,
        "envy": follower_down + [3] * 14,
    }
    expected = np.corrcoef(np.array([columns[r] for r in RATINGS], dtype=float))
    corr = rating_correlations(turns)
    assert list(corr.index) == list(RATINGS)
    np.testing.assert_allclose(corr.to_numpy(), expected, atol=1e-12)
    assert corr.loc["self_esteem", "motivation"] == pytest.approx(1.0)  # identical columns
    assert corr.loc["self_esteem", "empathy"] < 1.0

    # follower alone: positive ratings move together, envy exactly against them
    only = rating_correlations(turns[turns["model"] == "follower"])
    for a in RATINGS:
        for b in RATINGS:
            sign = 1.0 if (a == "envy") == (b == "envy") else -1.0
            assert only.loc[a, b] == pytest.approx(sign, abs=1e-12)

    drop = envy_drop(games).set_index("model")
    assert drop.loc["follower", "share_envy_fell"] == 1.0 and drop.loc["follower", "mean_envy_change"] == -2.0
    assert drop.loc["fixed", "share_envy_fell"] == 0.0 and drop.loc["fixed", "conversations"] == 2

    traj = trajectories(turns)
    envy = traj[(traj.model == "follower") & (traj.rating == "envy")].sort_values("scene_no")
    assert envy["value"].tolist() == [3.0 - r for r in RECOGNITION]
    parts = sections(games, turns)
    titles = [s.title for s in parts]
    assert titles == ["Rating trajectories", "Correlations between ratings", "Model profiles", "Per-scene means on both normalisations", "Envy from baseline to the last scene", "Invalid answers"]
    # both normalisations, labelled: the fixed profile's collaboration 2 is 0.4 on ÷5 and 0.25 on (x−1)/4
    profiles, scenes = parts[2].body, parts[0].body
    assert "÷5" in profiles and "(x−1)/4" in profiles and "collaboration_scaled" in profiles
    assert "willingness to collaborate ÷5" in scenes and "willingness to collaborate (x−1)/4" in scenes
    # the subject × peer heat map names its scale too
    assert "Normalised envy Ê_work (÷5, subject × peer)" in profiles
    fixed = games[games.model_subject == "fixed"]
    assert fixed["collaboration_norm"].iloc[0] == pytest.approx(0.4) and fixed["collaboration_scaled"].iloc[0] == pytest.approx(0.25)
    store.dispose()


def test_study_can_use_another_prompt_folder(write_study, tmp_path):
    variant = tmp_path / "my_prompts"
    variant.mkdir()
    (variant / "scene_baseline.j2").write_text("VARIANT BASELINE with {{ peer }} and me, {{ subject }}.\n")
    (variant / "VERSION").write_text("user-variant-1\n")
    path = write_study(pair_study("wp_variant", prompts="my_prompts"))
    stats, _ = run_study(load_study(path), tmp_path / "v.db", progress=False)
    assert stats.done == 4
    store = Store(tmp_path / "v.db")
    turns = turns_df(store, "wp_variant")
    games = store.games("wp_variant")
    assert {g["prompt_version"] for g in games} == {"user-variant-1"}
    first = turns[(turns.phase == "baseline") & (turns.model_subject == "follower") & (turns.model_peer == "fixed")].iloc[0]
    # scripted players are shown by neutral seat names, never by their strategies' names
    assert "VARIANT BASELINE with Player B and me, Player A." in first["messages"]
    later = turns[turns.phase == "hierarchy"].iloc[0]["messages"]
    assert "promoted to supervisor" in later  # scenes not in the variant folder keep the default text
    store.dispose()


def test_cli_run_export_and_report_contain_the_figures(write_study, tmp_path):
    path = write_study(pair_study("wp_cli"))
    db = str(tmp_path / "cli.db")
    run = run_agora("run", str(path), "--db", db, "--quiet")
    assert run.returncode == 0, run.stderr
    out = tmp_path / "games.csv"
    exp = run_agora("export", str(path), "--db", db, "--out", str(out))
    assert exp.returncode == 0, exp.stderr
    exported = pd.read_csv(out)
    for name in RATINGS:
        assert name in exported and f"{name}_norm" in exported
    follower = exported[exported.model_subject == "follower"].iloc[0]
    assert follower["envy"] == pytest.approx(25 / 7) and follower["envy_norm"] == pytest.approx(25 / 35)
    rep = run_agora("report", str(path), "--db", db, "--out", str(tmp_path / "report"))
    assert rep.returncode == 0, rep.stderr
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert 'alt="Rating trajectory over the scenes: follower"' in page
    assert 'alt="Rating trajectory over the scenes: fixed"' in page
    assert 'alt="Correlation matrix of the five ratings (all valid responses)"' in page
    assert 'alt="Model profiles: normalised mean ratings' in page
    assert page.count("data:image/svg+xml;base64,") >= 5
    assert "Envy fell from the first scene (baseline) to the last in 50.0% of 4 conversations" in page


def test_report_of_a_study_mixing_both_final_scenes(write_study, tmp_path):
    path = write_study(pair_study("wp_mixed", grid={"final_scene": ["leadership", "reflection"]}))
    stats, _ = run_study(load_study(path), tmp_path / "m.db", progress=False)
    assert stats.done == 8
    store = Store(tmp_path / "m.db")
    games, turns = games_df(store, "wp_mixed"), turns_df(store, "wp_mixed")
    traj = trajectories(turns)
    last = traj[(traj.model == "follower") & (traj.rating == "envy") & (traj.scene_no == 7)]
    assert last["scene"].tolist() == ["leadership/reflection"] and last["value"].tolist() == [(1 + 3) / 2]
    drop = envy_drop(games).set_index("model")
    assert drop.loc["follower", "share_envy_fell"] == 0.5  # falls with leadership, flat with reflection
    body = "".join(s.body for s in sections(games, turns))
    assert "leadership opportunity / final reflection" in body
    store.dispose()
