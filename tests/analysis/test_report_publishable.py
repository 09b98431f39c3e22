"""Reports a paper could print (issue 23, items 7-10): a study carries the metric definitions
of its games only; the report and the Python API choose one reference model by one rule (the
study file's setting overriding it); a signed metric's heatmap has a diverging scale that covers
its values; no interval of a bounded metric leaves its range; every CSV is named after its
table, and model × metric tables come in the wide form too."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agorabench import families
from agorabench.analysis.frames import games_df
from agorabench.analysis.plots import colour_scale, number
from agorabench.analysis.profile import section_table
from agorabench.analysis.report import build_report
from agorabench.analysis.stats import mean_ci
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.games.envy.report_points import RANGES as ENVY_RANGES
from agorabench.games.glee import analysis as ga
from agorabench.games.glee.analyze import analyze_glee
from agorabench.analysis.files import safe_cell
from agorabench.games.glee.report import _fmt_effect
from agorabench.games.ultimatum.report import RANGES as ULTIMATUM_RANGES
from agorabench.store.store import Store
from support.studies import envy_points, paper_grid, scripted, study_toml

#: Bargaining only; the file lists spe first, while "always-accept" sorts first.
BARGAINING = study_toml(
    "bargain_only",
    "glee.bargaining",
    matchups="all_pairs",
    repeats=2,
    seed=3,
    grid={"delta_a": [0.8, 0.9], "horizon": [3, "inf"]},
    fixed={"delta_b": 0.9, "infinite_rounds": 6},
    models=[scripted("spe"), scripted("always-accept"), scripted("random")],
)

#: Envy with few games per group: the t interval of a term's mean leaves 0–1 here.
ENVY_FEW = envy_points("envy_few", [scripted("self-max"), scripted("random")], seed=2, grid=paper_grid(margin=["marginal"], peer_move=["A"]))

ULTIMATUM = study_toml("ult_few", "ultimatum", matchups="ordered_pairs", repeats=3, seed=4, fixed={"pie": 10, "rounds": 2}, models=[scripted("random"), scripted("fair")])


def _report(tmp: Path, text: str, name: str) -> tuple[Path, str, Path]:
    """Play the study into a fresh SQLite file and build its report; (folder, page, database)."""
    path = tmp / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    study = load_study(path)
    db = tmp / f"{name}.db"
    stats, _ = run_study(study, db, progress=False)
    assert stats.done > 0 and stats.errors == 0
    store = Store(str(db))
    try:
        page = build_report(store, study.name, tmp / f"{name}-report").read_text(encoding="utf-8")
    finally:
        store.dispose()
    return tmp / f"{name}-report", page, db


def _games(db: Path, study: str) -> pd.DataFrame:
    store = Store(str(db))
    try:
        return games_df(store, study)
    finally:
        store.dispose()


@pytest.fixture(scope="module")
def bargaining(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("bargaining"), BARGAINING, "bargain_only")


@pytest.fixture(scope="module")
def envy(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("envy"), ENVY_FEW, "envy_few")


@pytest.fixture(scope="module")
def ultimatum(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("ultimatum"), ULTIMATUM, "ult_few")


def _metrics_block(page: str) -> str:
    start = page.index("<h3>Metrics</h3>")
    return page[start : page.index("</section>", start)]


def test_a_bargaining_only_report_carries_no_negotiation_or_persuasion_definitions(bargaining):
    _, page, _ = bargaining
    block = _metrics_block(page)
    assert "<b>Bargaining.</b>" in block and "Regression analysis" in block
    assert "Negotiation" not in block and "Persuasion" not in block and "V<sub>A</sub>" not in block
    # the registry joins the definitions of the games given, each once
    both = families.definitions("glee.bargaining", "glee.persuasion", "glee.bargaining")
    assert both.count("<b>Bargaining.</b>") == 1 and "<b>Persuasion.</b>" in both and "<b>Negotiation.</b>" not in both


def _named_reference(page: str) -> str:
    return re.search(r"id='reference-model'>Reference model: <b>(.*?)</b>, chosen by the rule", page).group(1)


def test_the_api_and_the_report_choose_the_same_reference_model(bargaining, tmp_path):
    folder, page, db = bargaining
    games = _games(db, "bargain_only")
    data = games[games["game"] == "glee.bargaining"]
    # no LLM in the file: its first model, not the first name in sorted order
    assert ga.reference_model(data) == _named_reference(page) == "spe"
    # Table 6 from the notebook's calls equals the report's
    table6 = ga.model_effects(ga.regressions(data, "glee.bargaining"))
    shown = pd.read_csv(folder / "bargaining-table-6-model-effects.csv")
    assert list(shown.iloc[:, -1]) == [safe_cell(v) for v in _fmt_effect(table6, "effect", "low", "high")]  # a CSV cell as a spreadsheet may open it
    assert "reference model spe" in analyze_glee(data, reps=2)

    # the study's [analysis] reference_model overrides the rule, in both
    text = BARGAINING.replace("\n[[models]]", '\n[analysis]\nreference_model = "random"\n\n[[models]]', 1)
    _, page, db = _report(tmp_path, text, "bargain_ref")
    data = _games(db, "bargain_only")
    assert ga.reference_model(data) == _named_reference(page) == "random"
    assert "reference model random" in analyze_glee(data, reps=2)


def _scales(page: str, title: str) -> list[tuple[float, float, bool]]:
    """(low, high, centred) of every heatmap whose caption starts with ``title``."""
    found = []
    for caption in re.findall(r"<figcaption>(.*?)</figcaption>", page):
        if caption.startswith(title):
            m = re.search(r"colour scale (-?[\d,]*\.\d+) to (-?[\d,]*\.\d+)(, diverging, centred at 0)?", caption)
            found.append((float(m.group(1).replace(",", "")), float(m.group(2).replace(",", "")), bool(m.group(3))))
    return found


def test_a_signed_metric_heatmap_uses_a_diverging_scale_that_covers_its_values(envy):
    _, page, db = envy
    games = _games(db, "envy_few")
    values = games.groupby(["matrix", "model_focal", "model_peer"])["t2_raw_ratio"].mean()
    assert values.min() < 0  # option A (the self-maximiser's) leaves the chooser behind its peer
    scales = _scales(page, "T2 gap focus (reported numbers")
    assert len(scales) == games["matrix"].nunique()
    for low, high, centred in scales:
        assert centred and low == -high and low <= values.min() + 5e-4 and high >= values.max() - 5e-4  # caption: 3 decimals
    for low, high, centred in _scales(page, "T1 self-first"):  # a 0–1 metric keeps its 0–1 scale
        assert (low, high, centred) == (0.0, 1.0, False)
    # values outside a stated range widen it; both signs make it diverging
    assert colour_scale(np.array([[-1.0, 0.5]]), 0.0, 1.0)[:2] == (-1.0, 1.0) and colour_scale(np.array([[-1.0, 0.5]]), 0.0, 1.0)[3]
    assert colour_scale(np.array([[1.4]]), 0.0, 1.0)[:2] == (0.0, 1.4)


def _check_ranges(folder: Path, ranges: dict[str, tuple[float | None, float | None]], metric_of=lambda r: r["metric"]) -> int:
    """Every row of the report's long CSVs whose metric has a range: its interval within it."""
    checked = 0
    for path in folder.glob("*.csv"):
        table = pd.read_csv(path)
        if not {"metric", "low", "high"} <= set(table.columns):
            continue
        for _, r in table.iterrows():
            bounds = ranges.get(metric_of(r))
            if bounds is None or pd.isna(r["low"]):
                continue
            lo, hi = bounds
            assert lo is None or r["low"] >= lo - 1e-12, (path.name, dict(r))
            assert hi is None or r["high"] <= hi + 1e-12, (path.name, dict(r))
            checked += 1
    return checked


def test_no_interval_of_a_bounded_metric_leaves_its_range(envy, bargaining, ultimatum):
    folder, _, db = envy
    games = _games(db, "envy_few")
    # the t interval would leave 0–1 for some model and matrix: the check below means something
    plain = [mean_ci(sub[t]) for _, sub in games.groupby(["model_focal", "matrix"]) for t in ("t1", "t2", "t3")]
    assert any(lo < 0 or hi > 1 for _, lo, hi, _ in plain if not math.isnan(lo))
    labels = {"T1 self-first": "t1", "T2 gap focus (reported numbers: gap / largest gap)": "t2_raw_ratio", "T2 gap focus (paper text: Δ/Δmax)": "t2", "T3 peer-reduce": "t3", "t1": "t1", "t2": "t2", "t3": "t3"}
    assert _check_ranges(folder, ENVY_RANGES, lambda r: labels.get(r["metric"])) > 0

    folder, _, _ = bargaining
    glee = ga.RANGES["glee.bargaining"]
    column = {"efficiency": "efficiency", "fairness": "fairness"}
    assert _check_ranges(folder, glee, lambda r: column.get(r["metric"]) or f"self_gain_{r['role'].lower()}") > 0
    adjusted = pd.read_csv(folder / "bargaining-adjusted-self-gain.csv")  # model-based: cut to 0–1
    assert (adjusted[["low", "low_cluster"]] >= 0).all().all() and (adjusted[["high", "high_cluster"]] <= 1).all().all()

    folder, _, _ = ultimatum
    assert _check_ranges(folder, ULTIMATUM_RANGES) > 0


def test_every_csv_is_named_after_its_table_and_grids_come_wide(envy, bargaining, ultimatum):
    for folder, page, _ in (envy, bargaining, ultimatum):
        csvs = sorted(folder.glob("*.csv"))
        assert csvs and not [p.name for p in csvs if re.fullmatch(r"table(-\d+)?", p.stem)]
    wide = pd.read_csv(envy[0] / "mean-envy-terms-per-model-wide.csv")
    assert list(wide["model"]) == ["random", "self-max"] and "T1 self-first" in wide.columns
    assert all(re.fullmatch(r"-?\d\.\d{3}( \[-?\d\.\d{3}, -?\d\.\d{3}\])?", c) for c in wide["T1 self-first"])
    assert (envy[0] / "mean-envy-terms-per-model.csv").exists()  # the long form beside it
    grid = pd.read_csv(bargaining[0] / "bargaining-raw-means-by-model-and-role-wide.csv")
    assert {"model", "role", "efficiency", "fairness", "self-gain"} <= set(grid.columns)
    assert {"model", "proposer: offer_share", "responder: accepted"} <= set(pd.read_csv(ultimatum[0] / "offers-and-acceptance-per-model-wide.csv").columns)


def test_the_profile_writes_every_number_in_one_format():
    rows = pd.DataFrame([
        {"kind": "model", "model": "a", "role": "", "measure": "x", "estimate": 1.76e-16, "low": -2.0, "high": 5.0},
        {"kind": "model", "model": "b", "role": "", "measure": "x", "estimate": 0.00129, "low": 0.0004, "high": 0.0021},
    ])
    cells = list(section_table(rows)["x"])
    assert cells == ["0.000 [-2.000, 5.000]", "0.001 [0.000, 0.002]"]
    assert number(-1e-9) == "0.000" and number(12345.6789) == "12,345.679"
