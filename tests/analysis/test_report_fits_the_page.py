"""Issue 41 item 10: reports and profiles fit the page. In real headless Chromium at a desktop
(1,024 px) and a phone (390 px) width, no figure of a report or of a profile is wider than the
window (each is scaled to its column, keeping its shape), and each opens at full size from a
click (a link to its SVG file beside the page). A profile across two SQLite databases names each
database in the cells of a section both fill, and its forest plot has one point per model and
database."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from agorabench.analysis import profile as profile_module
from agorabench.analysis.profile import build_profile, collect, database_labels, section_forest
from agorabench.analysis.report import build_report
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.games.subskills.subskills import TESTS
from agorabench.store.store import Store
from support.studies import scripted, study_toml
from support.web import browser  # noqa: F401  (browser: fixture)

WIDTHS = (1024, 390)
MODELS = ("knowing", "zero", "random")


def _study(seed: int) -> str:
    """Every sub-skill test and form once for three scripted players: its pass-rate figure is
    more than 1,024 px wide at its natural size."""
    return study_toml("skills", "subskills", matchups="same_model", repeats=1, seed=seed,
                      grid={"test": list(TESTS), "form": ["math", "simulation"], "draw": ["fixed", "random"]},
                      fixed={"scenario": "fishery", "language": "en"}, models=[scripted(m) for m in MODELS])


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A report of one database and a profile of two (``main.db``, ``pilot.db``)."""
    tmp = tmp_path_factory.mktemp("fit")
    dbs = []
    for name, seed in (("main", 1), ("pilot", 2)):
        path = tmp / f"{name}.toml"
        path.write_text(_study(seed), encoding="utf-8")
        stats, _ = run_study(load_study(path), tmp / f"{name}.db", progress=False)
        assert stats.errors == 0 and stats.done > 0
        dbs.append(str(tmp / f"{name}.db"))
    store = Store(dbs[0], read_only=True)
    try:
        report = build_report(store, "skills", tmp / "report")
    finally:
        store.dispose()
    profile, table = build_profile(dbs, tmp / "profile")
    return {"report": report, "profile": profile, "table": table, "dbs": dbs}


@pytest.mark.parametrize("which", ["report", "profile"])
def test_every_figure_fits_the_window_and_opens_full_size(pages, browser, which):  # noqa: F811
    page_path: Path = pages[which]
    natural = 0
    for width in WIDTHS:
        page = browser.new_page(viewport={"width": width, "height": 900})
        try:
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            images = page.evaluate("""() => [...document.images].map(i => {
                const r = i.getBoundingClientRect(); const a = i.closest('a');
                return {natural: i.naturalWidth, left: r.left, right: r.right, width: r.width, height: r.height, ratio: i.naturalHeight / i.naturalWidth, href: a ? a.href : null};
            })""")
            assert images, f"no figure on the {which}"
            for img in images:
                assert img["natural"] > 0 and img["left"] >= 0 and img["right"] <= width, (width, img)
                assert img["height"] / img["width"] == pytest.approx(img["ratio"], rel=0.02)  # scaled, not squeezed
                assert img["href"] and img["href"].endswith(".svg"), img  # the click target: the figure's own file
                assert Path(img["href"].removeprefix("file://")).parent == page_path.parent
                assert Path(img["href"].removeprefix("file://")).is_file()
            natural = max(natural, max(i["natural"] for i in images))
            # a click on the (scaled) figure opens its file, where it has its full size
            with page.expect_popup() as opened:
                page.click("figure img")
            full = opened.value
            full.wait_for_load_state("load")
            assert full.url == images[0]["href"]
            shown = full.evaluate("() => { const s = document.documentElement; return s.getBoundingClientRect().width; }")
            assert shown == pytest.approx(images[0]["natural"], abs=2)
            full.close()
        finally:
            page.close()
    if which == "report":  # the check means something: the widest figure is wider than a desktop window
        assert natural > max(WIDTHS), natural


def test_a_profile_of_two_databases_names_each_in_its_cells(pages):
    page = pages["profile"].read_text(encoding="utf-8")
    rows = pd.read_csv(pages["table"])
    assert set(rows["database"]) >= {"main", "pilot"}
    section = page[page.index("<h2>subskills"):]
    section = section[: section.index("</section>")]
    # every model is measured in both databases: every value cell holds both values, each named
    mine = rows[(rows["family"] == "subskills") & (rows["kind"] == "model")]
    assert set(mine["model"]) == set(MODELS) and (mine.groupby(["model", "measure"])["database"].nunique() == 2).all()
    cells = re.findall(r"<td>([^<]*\(main\)[^<]*)</td>", section)
    assert len(cells) >= len(MODELS) and all(re.fullmatch(r"\S.* \(main\); .* \(pilot\)", c) for c in cells), cells[:3]


def test_the_forest_has_one_point_per_model_and_database(pages, monkeypatch):
    stores = [(label, Store(db, read_only=True)) for label, db in zip(database_labels(pages["dbs"]), pages["dbs"])]
    try:
        rows = collect(stores)
    finally:
        for _, store in stores:
            store.dispose()
    drawn: list[pd.DataFrame] = []
    monkeypatch.setattr(profile_module, "forest", lambda df, *a, **k: drawn.append(df.copy()) or "")
    for (family, section), sub in rows.groupby(["family", "section"], sort=False):
        if family == "subskills":
            section_forest(sub, f"{family}: {section}")
    assert drawn
    for df in drawn:
        models = df[~df["who"].str.contains(r"\[theory\]")]
        assert not models.duplicated(["who", "measure"]).any()
        for measure, points in models.groupby("measure"):
            for model in set(points["model"]):
                labels = set(points.loc[points["model"] == model, "who"])
                assert labels == {f"{model} · main", f"{model} · pilot"}, (measure, labels)


def test_database_labels_are_stems_told_apart():
    assert database_labels(["runs/main.db", "runs/pilot.db"]) == ["main", "pilot"]
    assert database_labels(["a/run.db", "b/run.db", "c/x.db"]) == ["a/run", "b/run", "x"]
    assert database_labels(["a/run.db", "a/run.db"]) == ["run", "run #2"]
    assert database_labels(["postgresql://u@h/agora?sslmode=require", "sqlite:///runs/main.db"]) == ["agora", "main"]
