"""The sub-skills study end to end: the ready study file on the embedded model (a small sample
of its design) runs and its report builds with the pass-rate table and figure; scripted players
give the pass rates the rules say; and `agora profile` over a sub-skills and a resource-game
database puts each model's mean pass rate beside its survival time with the Spearman
correlation across models."""

from __future__ import annotations

import csv
import math

import pandas as pd
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from agorabench.analysis.frames import games_df
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.games.subskills.report import MEAN, pass_rates, relate, spearman, SURVIVAL
from agorabench.games.subskills.subskills import TESTS
from agorabench.store.store import Store
from support.helpers import agora, ROOT
from support.studies import commons, scripted, study_toml, toml_text

READY = ROOT / "studies" / "subskills.toml"


def test_the_ready_study_covers_every_test_form_draw_scenario_and_language():
    data = tomllib.loads(READY.read_text(encoding="utf-8"))
    grid = data["grid"]
    assert grid["test"] == list(TESTS) and set(grid["form"]) == {"math", "simulation"} and set(grid["draw"]) == {"fixed", "random"}
    assert set(grid["scenario"]) == {"fishery", "pasture", "pollution", "trash"} and set(grid["language"]) == {"en", "ja"}
    assert data["repeats"] == 150
    specs = {m["spec"] for m in data["models"]}
    assert specs == {"local", "strategy/knowing"}
    assert load_study(READY).count_games() == 160 * 150 * 2


@pytest.mark.llm
def test_the_ready_study_runs_on_the_embedded_model_and_reports(tmp_path, capsys):
    """The command line in this process (the test is about the study and its report, not the
    process), and the embedded model's answers capped at 32 tokens, not the study's 256: its
    valid answer here takes 27, and its other one (a Japanese prompt) runs on until cut off at
    any of these caps, three tries running, so the same games pass and fail (checked at 64 and
    32) at an eighth of the tokens."""
    data = tomllib.loads(READY.read_text(encoding="utf-8"))
    data["repeats"], data["sample"] = 1, 2
    (local,) = [m for m in data["models"] if m["spec"] == "local"]
    assert local["max_tokens"] == 256, "studies/subskills.toml's max_tokens changed: update this test"
    local["max_tokens"] = 32
    path = tmp_path / "subskills.toml"
    path.write_text(toml_text(data), encoding="utf-8")
    db = tmp_path / "s.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    assert "4 played, 0 errors" in out
    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "report"))
    assert rc == 0, err
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "Pass rate per test and model" in page and "sub-skill pass rates" in page and ".svg" in page
    rates = list(csv.DictReader(open(tmp_path / "report" / "sub-skill-pass-rates.csv", encoding="utf-8")))
    assert {r["model"] for r in rates} == {"smollm2-135m", "knowing"}
    assert all(float(r["pass rate"]) == 1.0 for r in rates if r["model"] == "knowing")
    store = Store(db)
    try:
        games = games_df(store, "subskills")
        local = games[games["model_agent"] == "smollm2-135m"]
        assert len(local) == 2 and set(local["passed"]) <= {0.0, 1.0}
        for _, g in local.iterrows():  # plumbing: the answer is a number or the game says it had none
            assert (g["valid"] and g["answer"] == g["answer"]) or (not g["valid"] and not g["passed"])
    finally:
        store.dispose()


def _subskills_study(name: str, models: list[dict]) -> str:
    return study_toml(
        name,
        "subskills",
        matchups="same_model",
        repeats=10,
        seed=3,
        grid={"test": list(TESTS), "form": ["math", "simulation"], "draw": ["fixed", "random"]},
        fixed={"scenario": "fishery", "language": "en"},
        models=models,
    )


def test_scripted_pass_rates_and_their_intervals(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(_subskills_study("ss", [scripted("knowing"), scripted("zero")]), encoding="utf-8")
    db = tmp_path / "s.db"
    stats, _ = run_study(load_study(path), db, progress=False)
    assert stats.done == 2 * 20 * 10 and stats.errors == 0
    store = Store(db)
    try:
        rates = pass_rates(games_df(store, "ss"))
    finally:
        store.dispose()
    knowing, zero = rates[rates["model"] == "knowing"], rates[rates["model"] == "zero"]
    assert len(knowing) == len(zero) == 20 and (knowing["n"] == 10).all()
    assert (knowing["pass rate"] == 1.0).all() and (knowing["high"] == 1.0).all()
    # Wilson's interval for 10 of 10: the lower end is 10 / (10 + z²) ≈ 0.722
    assert knowing["low"].round(3).eq(0.722).all()
    # zero never passes at S = 100, nor a sustainable action on the original's instances
    assert (zero[zero["test"].str.contains("S fixed")]["pass rate"] == 0.0).all()
    assert (zero[zero["test"].str.contains("sustainable")]["pass rate"] == 0.0).all()
    assert (zero["low"] == 0.0).all() and (zero["high"] > 0.2).all()


def test_relate_pairs_pass_rates_with_survival_and_ranks_them():
    rows = pd.DataFrame(
        [
            {"family": "subskills", "section": "pass rates", "measure": MEAN, "model": m, "estimate": p, "kind": "model"}
            for m, p in (("a", 0.9), ("b", 0.5), ("c", 0.1), ("d", 0.7))
        ]
        + [{"family": "other", "section": "s", "measure": SURVIVAL, "model": m, "estimate": s, "kind": "model"} for m, s in (("a", 12.0), ("b", 3.0), ("c", 1.0), ("e", 5.0))]
        + [{"family": "other", "section": "s", "measure": SURVIVAL, "model": "sustainable", "estimate": 12.0, "kind": "theory"}]
    )
    out = relate(rows)
    assert set(out["model"]) == {"a", "b", "c", "across 3 models"}  # d has no survival, e no pass rate
    rho = out[out["model"] == "across 3 models"]["estimate"].item()
    assert rho == pytest.approx(1.0)
    two = relate(rows[rows["model"].isin(["a", "b", "d", "e"])])  # a and b have both: too few to rank
    assert set(two["model"]) == {"a", "b"}
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0) and math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_agora_profile_relates_subskills_to_survival_across_databases(tmp_path, capsys):
    """Three models, each a scripted player in both studies: the knowing player keeps the lake
    (sustainable), the zero player fails and takes greedily, the random player in between."""
    skills = tmp_path / "skills.toml"
    names = {"m-know": ("knowing", "sustainable"), "m-zero": ("zero", "greedy"), "m-rand": ("random", "free-rider")}
    skills.write_text(_subskills_study("skills", [scripted(n, s) for n, (s, _) in names.items()]), encoding="utf-8")
    lake = tmp_path / "lake.toml"
    lake.write_text(commons("lake", repeats=2, seed=4, fixed={"scenario": "fishery", "n_agents": 3, "months": 4, "max_conversation_steps": 2}, models=[scripted(n, c) for n, (_, c) in names.items()]), encoding="utf-8")
    dbs = []
    for path in (skills, lake):
        db = tmp_path / f"{path.stem}.db"
        stats, _ = run_study(load_study(path), db, progress=False)
        assert stats.errors == 0 and stats.done == stats.total > 0
        dbs.append(str(db))
    out = tmp_path / "profile"
    rc, stdout, err = agora(capsys, "profile", *dbs, "--out", str(out))
    assert rc == 0, err
    rows = list(csv.DictReader(open(out / "profile.csv", encoding="utf-8")))
    related = [r for r in rows if r["section"] == "sub-skills and survival"]
    means = {r["model"]: float(r["estimate"]) for r in related if r["measure"] == MEAN}
    months = {r["model"]: float(r["estimate"]) for r in related if r["measure"] == SURVIVAL}
    assert set(means) == set(months) == set(names)
    assert means["m-know"] == 1.0 and means["m-zero"] < means["m-rand"] < 1.0
    (rho,) = [float(r["estimate"]) for r in related if r["model"] == "across 3 models"]
    assert rho == pytest.approx(spearman([means[m] for m in sorted(names)], [months[m] for m in sorted(names)]))
    assert not [r for r in rows if r["section"] == "not computed"]
    assert "sub-skills and survival" in (out / "profile.html").read_text(encoding="utf-8")
