"""The cost plan (``agorabench.core.plan``) without a server: what it counts, that the per-game
estimates behind a budget add up to the plan, which models it warns about, and the study's
``stop_after_invalid`` setting."""

from __future__ import annotations

import pytest

from agorabench.core.plan import build_plan, plan_study, unpriced
from agorabench.core.study import StudyError, load_study
from agorabench.loop import run as run_loop
from support.studies import envy_points, model, paper_grid, scripted, study_toml


def _study(write_study, models, name="s.toml", **settings):
    grid = paper_grid(margin=["marginal"], peer_move=["A", "D"])  # 12 configurations
    return load_study(write_study(envy_points("p", models, grid=grid, **settings), name=name))


def test_the_per_game_estimates_add_up_to_the_plan(write_study):
    local = model("smol", "local", max_tokens=32, price_input=2.0, price_output=4.0)
    study = _study(write_study, [local, scripted("b", "always-b"), scripted("s", "self-max")])
    plan, spent = plan_study(study, None)
    assert spent == (0.0, 0) and plan.todo == plan.total == 72 and plan.done == 0
    smol = plan.models["smol"]
    assert list(plan.models) == ["smol"] and smol.games == 48  # seated in 4 of the 6 ordered pairs
    assert smol.calls == 24 * 3 and smol.output_tokens == 24 * 3 * 32  # focal in 24 games, 3 decisions each
    estimates = [plan.game_estimate(s) for s in study.iter_specs()]
    assert sum(c for c, _ in estimates) == pytest.approx(plan.cost)
    assert sum(t for _, t in estimates) == pytest.approx(plan.tokens)
    assert plan.cost == pytest.approx((2 * smol.input_tokens + 4 * smol.output_tokens) / 1e6)
    assert sum(1 for c, _ in estimates if c == 0) == 48  # scripted or passive: nothing to pay
    # games that fit a budget, in the run's order
    assert plan.games_within(money=plan.cost) == 72 and plan.games_within(tokens=0) < 72
    assert plan.games_within(money=plan.cost, spent=(plan.cost, 0)) == next(i for i, (c, _) in enumerate(estimates) if c > 0)


def test_done_games_are_left_out_and_the_output_may_be_assumed(write_study):
    local = model("smol", "local", max_tokens=32)
    study = _study(write_study, [local, scripted("b", "always-b")])
    ids = [s.id for s in study.iter_specs()]
    plan = run_loop(build_plan(study, done=set(ids[:10]), output_tokens=5))
    assert (plan.total, plan.done, plan.todo) == (24, 10, 14) and not plan.output_bound
    assert plan.models["smol"].output_tokens == plan.models["smol"].calls * 5
    assert "5 tokens per call (assumed)" in plan.basis and plan.lines()[0].endswith("(10 of 24 already done)")


def test_a_reasoning_model_is_counted_at_its_whole_output_bound(write_study):
    thinker = model("r", "openai/o3", max_tokens=100, reasoning_budget=900, price_input=1.0, price_output=1.0)
    study = _study(write_study, [thinker, scripted("b", "always-b")])
    plan = run_loop(build_plan(study))
    assert plan.models["r"].output_per_call == 1000 and plan.warnings == []


def test_scripted_studies_cost_nothing_and_people_are_left_to_serve(write_study):
    plan = run_loop(build_plan(_study(write_study, [scripted("b", "always-b"), scripted("s", "self-max")])))
    assert plan.models == {} and plan.cost == 0 and "no language model plays" in plan.lines()[1]
    text = study_toml("web", "glee.bargaining", matchups="seats", seats=[{"alice": "person", "bob": "spe"}, {"alice": "smol", "bob": "spe"}], models=[model("person", "human"), model("smol", "local"), scripted("spe")])
    plan = run_loop(build_plan(load_study(write_study(text, name="web.toml"))))
    assert plan.todo == 1 and plan.people == 1 and "left to `agora serve`" in plan.lines()[0]


def test_models_of_a_providers_api_without_prices_are_named(write_study):
    study = _study(
        write_study,
        [model("api", "openai/gpt-4o-mini"), model("priced", "openai/gpt-4o-mini", price_output=0.6), model("own", "vllm/x", base_url="http://127.0.0.1:9/v1"), model("smol", "local"), scripted("b", "always-b")],
        matchups="all_pairs",
    )
    lines = unpriced(study)
    assert len(lines) == 1 and lines[0].startswith("model 'api' has no prices: cost shown as $0")
    assert unpriced(study, {"own", "smol"}) == []
    assert run_loop(build_plan(study)).warnings == lines


@pytest.mark.parametrize("value,ok", [("0", True), ("5", True), ("-1", False), ("1.5", False)])
def test_stop_after_invalid_is_a_whole_number_from_zero(value, ok, write_study):
    text = envy_points("p", [scripted("b", "always-b"), scripted("s", "self-max")]).replace('matchups = "ordered_pairs"', f'matchups = "ordered_pairs"\nstop_after_invalid = {value}')
    path = write_study(text)
    if ok:
        assert load_study(path).file.stop_after_invalid == int(value)
    else:
        with pytest.raises(StudyError, match="stop_after_invalid"):
            load_study(path)
