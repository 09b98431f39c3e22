"""A report says where it comes from (issue 23 item 7, in part): when it was made, by which
agorabench, from which database and study file; every seat's parameters are in its Models
table; the study's name heads the page once; the Games table's columns are its statuses."""

from __future__ import annotations

import re

import pandas as pd
from support.studies import ENVY_WORKPLACE

from agorabench import __version__
from agorabench.analysis.report import build_report
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.store.store import Store


def test_report_provenance_parameters_title_and_status_columns(tmp_path, write_study):
    study = load_study(write_study(ENVY_WORKPLACE))
    db = tmp_path / "p.db"
    stats, _ = run_study(study, db, progress=False)
    assert stats.done > 0
    store = Store(str(db))
    try:
        page = build_report(store, study.name, tmp_path / "rep").read_text(encoding="utf-8")
    finally:
        store.dispose()
    line = re.search(r"<p class='note' id='provenance'>(.*?)</p>", page).group(1)
    assert f"agorabench {__version__}" in line and str(db) in line and "MiB" in line
    assert re.search(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", line) and re.search(r"study file sha256 [0-9a-f]{12}", line)
    assert "id='warnings'" not in page  # scripted players, no errors: nothing to warn about
    assert page.count(f"Study {study.name}") == 1  # the page's heading, not again as a section title
    models = pd.read_csv(tmp_path / "rep" / "study-models.csv")
    assert models.set_index("name").loc["follower", "parameters"] == "sensitivity = 1.0"
    assert models.set_index("name").loc["flat", "parameters"] == "envy = 5"
    counts = page[page.index("<h3>Games</h3>") :]
    header = counts[: counts.index("</thead>")]
    assert "<th>done</th>" in header and "<th></th>" not in header and "<th>status</th>" not in header


class Junk:
    """A player whose every answer is unusable."""

    async def act(self, request):
        from agorabench.core.table import Reply

        return Reply(text="I would rather not say.")


def test_report_warns_first_about_a_model_whose_answers_were_unusable(tmp_path, write_study, monkeypatch):
    from agorabench.games.glee.strategies import BARGAINING

    monkeypatch.setitem(BARGAINING, "junk", Junk)
    text = 'name = "warned"\ngame = "glee.bargaining"\nmatchups = "ordered_pairs"\n\n[fixed]\nhorizon = 2\n\n[[models]]\nname = "junk"\nspec = "strategy/junk"\n\n[[models]]\nname = "spe"\nspec = "strategy/spe"\n'
    study = load_study(write_study(text))
    db = tmp_path / "w.db"
    stats, _ = run_study(study, db, progress=False)
    assert stats.done == 2
    store = Store(str(db))
    try:
        page = build_report(store, study.name, tmp_path / "rep", left_out=3).read_text(encoding="utf-8")
    finally:
        store.dispose()
    block = page[page.index("id='warnings'") : page.index("</div>", page.index("id='warnings'"))]
    assert page.index("id='warnings'") < page.index("<section>")  # before any table
    assert "junk: 100% of its turns were invalid" in block and "spe:" not in block
    assert "3 stored game(s) outside the study file's current design are left out" in block
