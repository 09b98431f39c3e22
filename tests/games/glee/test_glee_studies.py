"""GLEE study files (Table 2 expansion, multi-game studies) and the report / export end to end."""

from __future__ import annotations

import csv

import pytest

from agorabench.core.study import StudyError, load_study
from support.helpers import ROOT, agora
from support.studies import GLEE_SMALL


STUDIES = ROOT / "studies"


def test_glee_full_expands_to_the_1320_configurations_of_table_2():
    study = load_study(STUDIES / "glee_full.toml")
    parts = {p.game: study.configurations(p) for p in study.file.parts}
    assert {g: len(c) for g, c in parts.items()} == {"glee.bargaining": 384, "glee.negotiation": 576, "glee.persuasion": 360}
    configs = study.configurations()
    assert len(configs) == 1320
    assert len({(type(c).__name__, c.model_dump_json()) for c in configs}) == 1320
    bargaining = parts["glee.bargaining"]
    assert {c.horizon for c in bargaining} == {12, "inf"} and {c.delta_a for c in bargaining} == {0.8, 0.9, 0.95, 1.0}
    assert {c.horizon for c in parts["glee.negotiation"]} == {1, 10, "inf"}
    assert {c.horizon for c in parts["glee.persuasion"]} == {20}
    # one model: one game per configuration; two models: every ordered pair incl. self-play
    assert len(study.expand()) == 1320
    two = load_study(STUDIES / "glee_full.toml", models=["local", "openai/gpt-4o-mini"])
    specs = two.expand()
    assert len(specs) == 1320 * 4 and len({s.id for s in specs}) == len(specs)
    seats = {(s.seats["alice"], s.seats["bob"]) for s in specs}
    assert seats == {("local", "local"), ("local", "openai/gpt-4o-mini"), ("openai/gpt-4o-mini", "local"), ("openai/gpt-4o-mini", "openai/gpt-4o-mini")}
    assert {s.game for s in specs} == {"glee.bargaining", "glee.negotiation", "glee.persuasion"}


@pytest.mark.parametrize("name,configs", [("glee_bargaining", 16), ("glee_negotiation", 18), ("glee_persuasion", 16)])
def test_example_studies_load(name, configs):
    study = load_study(STUDIES / f"{name}.toml")
    assert len(study.configurations()) == configs and study.expand()


def test_parts_and_top_level_grid_do_not_mix(write_study):
    path = write_study('name = "x"\n[grid]\nmoney = [1]\n[[parts]]\ngame = "glee.bargaining"\n[[models]]\nname = "a"\nspec = "strategy/spe"\n')
    with pytest.raises(StudyError, match="parts"):
        load_study(path)
    path = write_study('name = "x"\n[[models]]\nname = "a"\nspec = "strategy/spe"\n', "nogame.toml")
    with pytest.raises(StudyError, match="needs a game"):
        load_study(path)


def test_run_report_and_export_of_a_small_scripted_study(write_study, tmp_path, capsys):
    path = write_study(GLEE_SMALL)
    db = tmp_path / "small.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    assert "10 games" in out and "0 errors" in out
    _, again, _ = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert "10 already done" in again
    out = tmp_path / "report"
    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(out))
    assert rc == 0, err
    page = (out / "index.html").read_text()
    for family in ("Bargaining", "Negotiation", "Persuasion"):
        assert f"{family}: efficiency, fairness and self-gain by model and role" in page
        assert f"{family}: model pairs" in page
        assert f"{family}: invalid answers" in page
        assert f"{family}: raw mean efficiency (Alice × Bob)" in page
    rc, _, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "games.csv"))
    assert rc == 0, err
    rows = list(csv.DictReader((tmp_path / "games.csv").open()))
    assert len(rows) == 10
    columns = set(rows[0])
    for col in ["efficiency", "fairness", "self_gain_alice", "self_gain_bob", "agreed_round", "alice_share", "price", "high_rounds", "high_sold", "low_unsold", "delta_a", "delta_b", "money", "horizon", "complete_info", "messages", "f_a", "f_b", "p", "v", "myopic"]:
        assert col in columns, col
    bargaining = [r for r in rows if r["game"] == "glee.bargaining" and r["model_alice"] == "a"]
    # always-accept Alice proposes an even split in round 1 and accepts whatever random Bob
    # proposes in round 2: a deal by round 2, and a round-1 deal is 50/50
    assert len(bargaining) == 2
    for r in bargaining:
        assert r["agreed_round"] in ("1", "2", "1.0", "2.0")
        if float(r["agreed_round"]) == 1:
            assert float(r["alice_share"]) == 0.5
