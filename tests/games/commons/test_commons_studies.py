"""Commons studies through the command line (called in this process: ``main``'s return value is
the exit status): run, export and report a small scripted study; the shipped study files load;
one ``--model`` fills every seat."""

from __future__ import annotations

import csv

import pytest

from agorabench.core.study import load_study
from support.helpers import ROOT, agora
from support.studies import COMMONS_SMALL, commons


#: every seat sustainable but agent_2, who is greedy
MIXED = commons("commons_mixed", matchups="seats", seats=[{"*": "sustainable", "agent_2": "greedy"}], fixed={"n_agents": 3, "months": 2})


@pytest.mark.parametrize("path", sorted((ROOT / "studies").glob("commons_*.toml")), ids=lambda p: p.stem)
def test_shipped_studies_load(path):
    study = load_study(path)
    specs = study.expand()
    assert specs and all(s.game == "commons" for s in specs)
    assert all(set(s.seats) >= {f"agent_{i}" for i in range(5)} for s in specs)


def test_scenario_study_files_exist():
    for scenario in ("fishery", "pasture", "pollution", "trash"):
        study = load_study(ROOT / "studies" / f"commons_{scenario}.toml")
        assert {s.config["scenario"] for s in study.expand()} == {scenario}


def test_small_study_run_export_and_report(write_study, tmp_path, capsys):
    path = write_study(COMMONS_SMALL)
    db = tmp_path / "s.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    assert "8 games" in out
    out = tmp_path / "games.csv"
    assert agora(capsys, "export", str(path), "--db", str(db), "--out", str(out))[0] == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 8
    for row in rows:
        assert {"survival_time", "total_gain", "efficiency", "equality", "over_usage"} <= set(row)
        if row["model_agent_0"] == "sustainable":
            # floor(50/3) = 16 each month for 3 months; T·f0 = 150
            assert float(row["survival_time"]) == 3 and float(row["total_gain"]) == 48
            assert float(row["efficiency"]) == pytest.approx(96.0) and float(row["equality"]) == 100 and float(row["over_usage"]) == 0
        else:
            assert float(row["survival_time"]) == 1 and float(row["over_usage"]) == 100
    report_dir = tmp_path / "report"
    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(report_dir))
    assert rc == 0, err
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    for title in ("Resource per month", "Metrics per model", "Universalization on vs off"):
        assert f"<h2>{title}</h2>" in page
    # one summary per condition (univ. off/on), one per run, then Kaplan–Meier, trajectory and Gini
    assert page.count("<img") == 2 + 8 + 3
    assert "48.00 ± 0.00" in page  # sustainable total gain, mean ± sd over its 2 runs
    assert "Δ survival_time" in page


def test_mixed_seats_and_single_model_override(write_study, tmp_path, capsys):
    path = write_study(MIXED, "mixed.toml")
    specs = load_study(path).expand()
    # "*" also fills the manager seat (the agreed-limit extraction, on by default)
    assert [s.seats for s in specs] == [{"agent_0": "sustainable", "agent_1": "sustainable", "agent_2": "greedy", "manager": "sustainable"}]
    specs = load_study(path, models=["strategy/follow-limit"]).expand()
    assert len(specs) == 1 and set(specs[0].seats.values()) == {"strategy/follow-limit"}
    db = tmp_path / "m.db"
    rc, _, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    from agorabench.store.store import Store

    (game,) = Store(db).games("commons_mixed")
    assert game["outcome"]["collapsed"] and game["metrics"]["survival_time"] == 1
    assert game["outcome"]["months"][0]["requested"] == {"agent_0": 16, "agent_1": 16, "agent_2": 100}
    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "r"))
    assert rc == 0, err
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert "sustainable×2 + greedy×1" in page and "Mixed groups: total gain per agent by seat model" in page
    # the two sustainable agents got their 16 each; the greedy one got the other 68
    assert "68.000" in page


def test_multigov_study_plays_the_papers_mixes_without_a_scripted_summariser():
    study = load_study(ROOT / "studies" / "commons_multigov.toml")
    specs = study.expand()
    assert all("strategy/summariser" != m.spec for m in study.models.values())
    mixes = []
    for spec in specs:
        agents = [spec.seats[f"agent_{i}"] for i in range(5)]
        mixes.append((agents.count("strong"), agents.count("weak")))
        assert spec.seats["manager"] == "strong"  # the framework model, as in the fork's config
        assert spec.config["protocol"] == "original" and spec.config["summariser"]
    assert sorted(set(mixes), reverse=True) == [(4, 1), (3, 2), (2, 3), (1, 4)]
