"""A report is never lost to one failing estimate (issue 19 §3): data that make estimators fail
(too few games, no variation, a perfectly separated choice) still give a whole report; an
analysis that raises leaves its section with a one-line reason and a CSV that says so; the
profile keeps the other families when one family's estimate fails."""

from __future__ import annotations

import csv

import pytest

from agorabench.cli import main
from support.studies import envy_points, paper_grid, scripted

BARGAINING = """
name = "b"
game = "glee.bargaining"
matchups = "ordered_pairs"
[fixed]
money = 100
horizon = 3
[[models]]
name = "{a}"
spec = "strategy/{a}"
[[models]]
name = "{b}"
spec = "strategy/{b}"
"""

def points(matchups: str) -> str:
    """Always-B and the self-maximiser in one situation of M1 (leading, marginal, peer move A)."""
    grid = paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=["A"])
    return envy_points("e", [scripted("always-b"), scripted("self-max")], matchups=matchups, grid=grid)

#: (label, study text, a section title every whole report of it holds)
CASES = [
    # random offers met by a responder who rejects them all: the acceptance logit's likelihood is
    # flat on one side, and the old profile interval died in its root search
    ("separated-rejections", BARGAINING.format(a="random", b="always-reject"), "responder acceptance"),
    ("separated-acceptances", BARGAINING.format(a="spe", b="always-accept"), "responder acceptance"),
    ("too-few-games", points("ordered_pairs"), "Fehr–Schmidt"),
    # each model against itself, every choice the same
    ("no-variation", points("same_model"), "Mean terms per model"),
]


def _report(tmp_path, capsys, text: str) -> tuple[int, str, str]:
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    db = tmp_path / "s.db"
    assert main(["run", str(path), "--db", str(db), "--quiet"]) == 0
    capsys.readouterr()
    rc = main(["report", str(path), "--db", str(db), "--out", str(tmp_path / "rep")])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("label,text,title", CASES, ids=[c[0] for c in CASES])
def test_data_that_defeat_an_estimator_still_give_the_whole_report(label, text, title, tmp_path, capsys):
    rc, out, err = _report(tmp_path, capsys, text)
    assert rc == 0 and "report:" in out, out + err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "games played" in page.lower() or "Games" in page
    assert title in page, title
    # every section that could not be computed says why, in one line, and has its CSV
    for failed in (tmp_path / "rep").glob("*not-computed*.csv"):
        rows = list(csv.DictReader(open(failed, encoding="utf-8")))
        assert len(rows) == 1 and rows[0]["not computed"], failed


def test_an_estimator_that_raises_leaves_its_reason_and_the_rest(tmp_path, capsys, monkeypatch):
    from agorabench.games.envy import report_points

    def broken(*args, **kwargs):
        raise ValueError("f(a) and f(b) must have different signs")

    monkeypatch.setattr(report_points, "point_choices", broken)
    rc, out, err = _report(tmp_path, capsys, points("ordered_pairs"))
    assert rc == 0, out + err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "Fehr–Schmidt preferences (not computed)" in page
    assert "ValueError: f(a) and f(b) must have different signs" in page
    assert "Mean terms per model" in page and "Envy terms on M1" in page  # the rest is written
    marked = tmp_path / "rep" / "fehr-schmidt-preferences-not-computed.csv"
    (row,) = list(csv.DictReader(open(marked, encoding="utf-8")))
    assert row["section"] == "Fehr–Schmidt preferences" and "different signs" in row["not computed"]


def test_a_glee_analysis_that_raises_leaves_the_other_glee_sections(tmp_path, capsys, monkeypatch):
    from agorabench.analysis import acceptance

    def broken(*args, **kwargs):
        raise ZeroDivisionError("no decisions with variation")

    monkeypatch.setattr(acceptance, "fit_groups", broken)
    rc, out, err = _report(tmp_path, capsys, BARGAINING.format(a="spe", b="random"))
    assert rc == 0, out + err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "Bargaining: responder acceptance (not computed)" in page and "ZeroDivisionError" in page
    assert "Corpus statistics" in page or "corpus" in page.lower()


def test_a_profile_keeps_the_families_whose_estimates_worked(tmp_path, capsys, monkeypatch):
    from agorabench.games.glee import report as glee_report

    dbs = []
    for name, text in (("g", BARGAINING.format(a="spe", b="random")), ("e", points("ordered_pairs"))):
        path = tmp_path / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        db = tmp_path / f"{name}.db"
        assert main(["run", str(path), "--db", str(db), "--quiet"]) == 0
        dbs.append(str(db))

    def broken(*args, **kwargs):
        raise ValueError("too few games")

    monkeypatch.setattr(glee_report, "profile_rows", broken)
    capsys.readouterr()
    rc = main(["profile", *dbs, "--out", str(tmp_path / "prof")])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    rows = list(csv.DictReader(open(tmp_path / "prof" / "profile.csv", encoding="utf-8")))
    assert any("too few games" in (r.get("note") or "") for r in rows)
    assert any(r.get("family", "").startswith("envy") or "envy" in str(r.values()) for r in rows)
