"""GovSim importer over every fixture run: imports, consistency with the runs index, and our
recomputed metrics against Ovanerven's per-run metrics table and formulas."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from agorabench.games.commons.importer import import_logs
from agorabench.store.store import Store


@pytest.fixture(scope="module")
def imported(tmp_path_factory, request):
    fixtures = request.getfixturevalue("shared_fixtures") / "govsim"
    store = Store(tmp_path_factory.mktemp("govsim") / "import.db")
    n, problems = store.save_records(import_logs(fixtures, "govsim"))
    games = {g["outcome"]["source_path"]: g for g in store.games("govsim")}
    return fixtures, n, problems, games, store


def test_every_fixture_run_imports(imported):
    fixtures, n, problems, games, _ = imported
    logs = sorted(fixtures.rglob("log_env.json"))
    assert n == len(logs) == 116 == len(games)
    assert not [p for p in problems if "not imported" in p or "!=" in p]  # every run loads, harvests add up
    for g in games.values():
        assert g["status"] == "done" and g["source"] == "import:govsim" and g["game"] == "commons"


def _index(fixtures: Path) -> dict[str, dict[str, str]]:
    with open(fixtures / "pedrocurvo" / "runs_index.csv", newline="", encoding="utf-8") as fh:
        return {row["run_dir"]: row for row in csv.DictReader(fh)}


def test_pedrocurvo_runs_match_the_index(imported):
    fixtures, _, _, games, store = imported
    index = _index(fixtures)
    assert len(index) == 112
    for run, row in index.items():
        g = games[f"pedrocurvo/{run}"]
        out = g["outcome"]
        assert out["months_played"] == int(row["n_harvest_rounds"]), run
        assert out["months"][-1]["stock_after"] == float(row["pool_after_last_harvest"]), run
        assert g["metrics"]["total_gain_sum"] == pytest.approx(float(row["total_collected"])), run
        harvests = [t for t in store.turns(game_id=g["id"]) if t["phase"] == "harvest"]
        assert len(harvests) == int(row["harvest_records"])
        assert sum(1 for t in harvests if t["action"]["amount"] == 0) == int(row["zero_wanted_harvests"])
        if row["has_config"] == "True":
            assert "|".join(v for k, v in sorted(g["seats"].items()) if k != "manager") == "|".join(row["model"].split("|") * (5 if "|" not in row["model"] else 1)), run
            assert g["config"]["universalization"] == (row["inject_universalization"] == "True")
            assert g["config"]["language"] == ("ja" if row["scenario"] == "fishing_japanese" else "en")
        status = row["end_status"]
        if status == "collapsed":
            assert out["collapsed"] and g["metrics"]["survived"] == 0
        elif status == "survived_12":
            assert not out["collapsed"] and g["metrics"]["survived"] == 1 and g["metrics"]["survival_time"] == 12
        elif status == "incomplete":
            assert not out["collapsed"] and not out["complete"]
        else:
            # Reason: these trash_v6.4 runs were made by an older trash environment that ended the
            # run when the pile reached 0 (the fishery rule); under the trash rule (collapse when
            # more than 95 are left) an empty house is no collapse, so they are incomplete here.
            assert status == "ended_pool_below_5" and out["scenario"] == "trash"
            assert not out["collapsed"] and not out["complete"] and out["months"][-1]["stock_after"] < 5


def _ovanerven_metrics(out: dict) -> dict[str, float]:
    """Ovanerven's compute_metrics.py as the fixtures README describes it (T = 12, f0 = 50,
    threshold B_r/2/n on collected amounts, survival judged from logged rounds only)."""
    months = out["months"]
    roles = sorted(months[0]["collected"])
    n = len(roles)
    survival = next((i + 1 for i, m in enumerate(months) if m["stock_after"] < 5), 12)
    gains = {r: sum(m["collected"][r] for m in months) for r in roles}
    total = sum(gains.values())
    over = considered = 0
    for i, m in enumerate(months):
        if i < survival:
            for r in roles:
                considered += 1
                over += m["collected"][r] > m["stock_before"] / 2 / n
    equality = 100 * (1 - sum(abs(gains[a] - gains[b]) for a in roles for b in roles) / (2 * n * n * (total / n))) if total else 0.0
    return {
        "survival_time": survival,
        "total_gain": total / n,
        "efficiency": 100 * (1 - max(0, 600 - total) / 600),
        "equality": equality,
        "over_usage": 100 * over / considered if considered else 100.0,
        "gains": gains,
    }


def test_ovanerven_metrics_table_reproduced(imported):
    fixtures, _, _, games, _ = imported
    with open(fixtures / "ovanerven/GovSim/govsim_metrics/metrics/govsim_metrics.csv", newline="", encoding="utf-8") as fh:
        rows = {(r["scenario"], r["model"], r["run"]): r for r in csv.DictReader(fh) if r["Type"] == "run"}
    checked = 0
    for path, g in games.items():
        if not path.startswith("ovanerven/"):
            continue
        scenario_dir, model_dir, run = Path(path).parts[-3:]
        row = rows[(scenario_dir, model_dir, run)]
        m = g["metrics"]
        assert m["survival_time"] == float(row["survival_time"])
        assert 100 * m["survived"] == float(row["survival_rate"])
        assert m["total_gain"] == pytest.approx(float(row["gain"]))
        assert m["total_gain_sum"] == pytest.approx(float(row["total_gains"]))
        assert m["efficiency"] == pytest.approx(float(row["efficiency"]))
        assert m["equality"] == pytest.approx(float(row["equality"]))
        assert m["over_usage"] == pytest.approx(float(row["over_usage"]))
        theirs = ast.literal_eval(row["gains_by_agent"])
        ours = {f"persona_{r.split('_')[1]}": sum(mo["collected"][r] for mo in g["outcome"]["months"]) for r in g["outcome"]["names"]}
        assert ours == pytest.approx(theirs)
        checked += 1
    assert checked == 4


def test_ovanerven_formulas_over_all_pedrocurvo_runs(imported):
    """Ovanerven's formulas applied to every pedrocurvo run agree with ours except where the
    definitions differ, and each difference is asserted with its reason."""
    _, _, _, games, _ = imported
    differ = {"incomplete": 0, "trash": 0}
    for path, g in games.items():
        if not path.startswith("pedrocurvo/"):
            continue
        out, m = g["outcome"], g["metrics"]
        theirs = _ovanerven_metrics(out)
        assert m["total_gain"] == pytest.approx(theirs["total_gain"]), path
        if m["equality"] is None:  # nobody took anything: undefined as the original's Gini (Ovanerven's code says 0)
            assert theirs["total_gain"] == 0 and theirs["equality"] == 0.0, path
        else:
            assert m["equality"] == pytest.approx(theirs["equality"]), path
        if out["scenario"] == "trash":
            # Reason: the trash scenario is inverse. Ovanerven's fixed rules judge collapse as a
            # pile below 5, over-usage as taking more than B/2/n and efficiency as gain vs 600;
            # here collapse is more than 95 left, over-usage is removing less than the share
            # f(t)/n (f = 50), and efficiency is Table 5's (600/ΣR once more than 600 is removed).
            differ["trash"] += 1
            expected_survival = next((i + 1 for i, mo in enumerate(out["months"]) if mo["stock_after"] > 95), len(out["months"]))
            assert m["survival_time"] == expected_survival, path
            continue
        assert m["efficiency"] == pytest.approx(theirs["efficiency"]), path
        assert m["over_usage"] == pytest.approx(theirs["over_usage"]), path
        if out["complete"]:
            assert m["survival_time"] == theirs["survival_time"], path
        else:
            # Reason: a run that stopped early without collapse gets survival time 12 from
            # Ovanerven (survival judged from logged rounds only); here it is the months played.
            differ["incomplete"] += 1
            assert theirs["survival_time"] == 12 and m["survival_time"] == out["months_played"] < 12, path
    assert differ == {"incomplete": 7, "trash": 37}


def test_import_cli(shared_fixtures, tmp_path):
    from support.helpers import run_agora

    db = tmp_path / "o.db"
    result = run_agora("import", "govsim", str(shared_fixtures / "govsim/ovanerven"), "--db", str(db), "--study", "ov")
    assert result.returncode == 0, result.stderr
    assert "imported 4 games" in result.stdout
    store = Store(db)
    assert {g["config"]["scenario"] for g in store.games("ov")} == {"fishery", "pasture", "pollution"}
    assert json.dumps(store.games("ov")[0]["metrics"])


def _row(games: list[dict], metric: str) -> tuple[float, float]:
    """Mean and sample sd over runs, rounded as the paper's tables print them."""
    vals = pd.Series([float(g["metrics"][metric]) for g in games])
    return round(vals.mean(), 1), round(vals.std(ddof=1), 1)


def _qwen_runs(games: dict, scenario_dir: str, universalization: bool) -> list[dict]:
    return [g for p, g in games.items() if p.startswith(f"pedrocurvo/{scenario_dir}/Qwen2.5-0.5B/") and g["config"]["universalization"] == universalization]


# The Qwen2.5-0.5B rows of the reproduction's Tables 1 (default) and 2 (universalization):
# (survival time, total gain, efficiency, equality, over-usage), each as (mean, sd).
TABLE_1 = {"survival_time_harvested": (1.3, 0.6), "total_gain": (24.7, 8.1), "efficiency": (20.6, 6.7), "equality": (31.8, 20.4), "over_usage": (16.7, 5.8)}
TABLE_2 = {"survival_time_harvested": (2.3, 1.2), "total_gain": (25.9, 7.0), "efficiency": (21.6, 5.8), "equality": (27.2, 9.8), "over_usage": (8.9, 10.2)}
# Residuals (docs/fidelity.md): no counting tried over these six logs gives the tables' over-usage
# (per-agent or group threshold, > or ≥, requested or collected amounts, all months, harvest
# months only, or the first survival-time months, per agent-month or per month); Table 1's
# equality needs 55.4 for pleasant-firefly-143, whose collected amounts (0, 70, 0, 55, 45) give
# 54.1 (its requests, 0, 70, 0, 100, 100, would give 55.6).
# Table 2's sds of total gain, efficiency and equality (7.0, 5.8, 9.8) are what wise-fog-154 gives
# without Jack's 1 ton in its month 3 (gains 0, 9, 100, 59, 0; total 168); its log adds up to 169,
# which gives 7.1, 5.9 and 9.7. The means agree either way.
RESIDUAL = {
    (1, "equality"): (31.4, 19.7),
    (2, "total_gain"): (25.9, 7.1),
    (2, "efficiency"): (21.6, 5.9),
    (2, "equality"): (27.2, 9.7),
    (1, "over_usage"): (9.6, 2.7),
    (2, "over_usage"): (7.1, 3.4),
}


@pytest.mark.parametrize("table,universalization,expected", [(1, False, TABLE_1), (2, True, TABLE_2)])
def test_qwen_rows_of_tables_1_and_2_from_the_logs(imported, table, universalization, expected):
    _, _, _, games, _ = imported
    runs = _qwen_runs(games, "fishing_v7.0", universalization)
    assert len(runs) == 3 and all(g["metrics"]["survived"] == 0 for g in runs)
    for metric, paper in expected.items():
        ours = _row(runs, metric)
        assert ours == RESIDUAL.get((table, metric), paper), metric
    # the tables' survival counting (only months where someone asked for more than 0) differs
    # from counting every month played, which gives 3.3 and 4.3
    assert _row(runs, "survival_time")[0] == (3.3 if table == 1 else 4.3)


def test_qwen_and_llama70b_rows_of_table_5_from_the_logs(imported):
    _, _, _, games, _ = imported
    qwen = _qwen_runs(games, "trash_v7.0", False)
    assert len(qwen) == 3
    assert _row(qwen, "survival_time_harvested") == (0.0, 0.0)  # nobody asked to clean anything
    assert _row(qwen, "total_loss") == (130.0, 0.0) and _row(qwen, "efficiency") == (0.0, 0.0)
    assert _row(qwen, "over_usage") == (100.0, 0.0) and _row(qwen, "survived") == (0.0, 0.0)
    # Residual: Table 5 prints equality 100 when nothing was removed; the original's code divides
    # by ΣR = 0, so ours leaves equality undefined (None) there.
    assert all(g["metrics"]["equality"] is None for g in qwen)
    llama = [g for p, g in games.items() if p.startswith("pedrocurvo/trash_v7.0/Llama-3-70B/")]
    assert len(llama) == 3
    assert _row(llama, "total_loss") == (0.0, 0.0) and _row(llama, "efficiency") == (92.3, 0.0)


def test_cut_off_runs_are_censored_not_collapsed(imported):
    _, _, problems, games, _ = imported
    cut = [g for g in games.values() if not g["outcome"]["complete"]]
    # 7 fishery and 4 trash logs that stop early, 3 old trash runs ending at an empty house
    assert len(cut) == 7 + 4 + 3
    for g in cut:
        assert g["outcome"]["censored"] and not g["outcome"]["collapsed"]
        assert g["metrics"]["censored"] == 1 and g["metrics"]["survived"] is None
    done = [g for g in games.values() if g["outcome"]["complete"]]
    assert all(g["metrics"]["censored"] == 0 and g["metrics"]["survived"] in (0, 1) for g in done)
    assert sum("censored" in p for p in problems) == len(cut)
