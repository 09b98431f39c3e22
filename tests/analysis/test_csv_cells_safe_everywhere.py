"""Issue 42 (doubts on item 5): every CSV agorabench writes is safe to open in a spreadsheet,
not only ``agora export``'s: the tables of ``agora report``, the CSVs of ``agora analyze`` and
``agora profile`` neutralise a text cell (or column name, or index value) that a spreadsheet
would run as a formula (``=``, ``+``, ``-``, ``@``, tab, CR: a leading ``'``, as OWASP
recommends) and drop NUL, through the export's own rule; numbers stay numbers. A GLEE study whose
two scripted models are named like formulas, reported, analysed and profiled through the command
line."""

from __future__ import annotations

import csv

import pandas as pd

from agorabench.analysis.files import FORMULA_STARTS, spreadsheet_safe, write_csv
from agorabench.analysis.frames import spreadsheet_safe as export_rule
from support.helpers import agora
from support.studies import model, study_toml

FORMULA = "=HYPERLINK(\"http://127.0.0.1/x\",\"click\")"
MINUS = "-spe"


def _study() -> str:
    return study_toml("formulas", "glee.bargaining", matchups="all_pairs", repeats=2, seed=1,
                      grid={"delta_a": [0.8, 0.95]}, fixed={"delta_b": 0.9, "horizon": 3, "money": 100},
                      models=[model(FORMULA, "strategy/spe"), model(MINUS, "strategy/always-accept")])


def _cells(path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as f:
        return [cell for row in csv.reader(f) for cell in row]


def _unsafe(cell: str) -> bool:
    if "\x00" in cell:
        return True
    if not cell.startswith(FORMULA_STARTS):
        return False
    try:
        float(cell)
    except ValueError:
        return True
    return False


def test_report_analyze_and_profile_csvs_hold_no_formula(tmp_path, capsys):
    path, db = tmp_path / "formulas.toml", tmp_path / "f.db"
    path.write_text(_study(), encoding="utf-8")
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0 and "0 errors" in out, out + err
    written = []
    rc, out, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "report"))
    assert rc == 0, out + err
    written += sorted((tmp_path / "report").glob("*.csv"))
    rc, out, err = agora(capsys, "analyze", "glee", str(path), "--db", str(db), "--out", str(tmp_path / "analysis"), "--reps", "20")
    assert rc == 0, out + err
    written += sorted((tmp_path / "analysis").glob("*.csv"))
    rc, out, err = agora(capsys, "profile", str(db), "--out", str(tmp_path / "profile"))
    assert rc == 0, out + err
    written += [tmp_path / "profile" / "profile.csv"]
    assert len(written) > 5
    named = set()
    for file in written:
        cells = _cells(file)
        assert not [c for c in cells if _unsafe(c)], (file.name, [c for c in cells if _unsafe(c)][:5])
        if "'" + FORMULA in cells or "'" + MINUS in cells:
            named.add(file.parent.name)
    # the models' names are there, neutralised, in each command's files
    assert named == {"report", "analysis", "profile"}, named
    # the page itself shows the names as they are
    assert MINUS in (tmp_path / "report" / "index.html").read_text(encoding="utf-8")


def test_the_rule_is_the_exports_and_covers_headers_and_index(tmp_path):
    assert export_rule is spreadsheet_safe
    df = pd.DataFrame({"@who": ["=1+2", "-3", "+x", "ok\x00", None], "n": [-1, 2, 3, 4, 5]}, index=["-a", "b", "c", "d", "e"])
    safe = spreadsheet_safe(df)
    assert list(safe.columns) == ["'@who", "n"] and list(safe.index) == ["'-a", "b", "c", "d", "e"]
    assert safe["'@who"].tolist()[:4] == ["'=1+2", "-3", "'+x", "ok"] and pd.isna(safe["'@who"].iloc[4]) and safe["n"].tolist() == [-1, 2, 3, 4, 5]
    assert df["@who"].tolist()[0] == "=1+2"  # the frame given is left as it was
    write_csv(df, tmp_path / "t.csv")
    assert not [c for c in _cells(tmp_path / "t.csv") if _unsafe(c)]
