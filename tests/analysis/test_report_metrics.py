"""Reports people publish (issue 10, item 7), checked the same way for every game family: the
report of a small scripted study opens with a Metrics block that defines the metrics its tables
show, and every figure is also an SVG file and every table a CSV file beside ``index.html``."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest

from agorabench.analysis.plots import MAX_LINES, artifacts, bands
from agorabench.analysis.report import build_report
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.families import definitions as family_definitions
from agorabench.store.store import Store
from support.studies import COMMONS_SMALL, ENVY_POINTS, ENVY_WORKPLACE, GLEE_SMALL

# the small scripted studies other tests play as well, one per family

#: family -> (study file, headline metrics that must be defined; None: every metric column of
#: the family's tables must be a defined term)
FAMILIES = {
    "envy.points": (ENVY_POINTS, ["T1", "T2", "T3"]),
    "envy.workplace": (ENVY_WORKPLACE, None),
    "glee": (GLEE_SMALL, ["efficiency", "fairness", "self-gain"]),
    "commons": (COMMONS_SMALL, None),
}

#: The games of a family's study (GLEE_SMALL plays all three GLEE games).
GAMES_OF = {"glee": ("glee.bargaining", "glee.negotiation", "glee.persuasion")}
#: Tables every report opens with (study description, overview): not the family's metrics.
COMMON_TABLES = {"study-settings", "study-models", "game-counts", "seats-per-model", "turns-per-model", "first-errors"}
#: Columns that identify a row or count what a row stands on, rather than measure anything.
IDENTIFIERS = {
    "model", "model_subject", "model_peer", "peer", "seat model", "group", "condition", "scenario", "language",
    "scene", "scene_no", "month", "metric", "rating", "factor", "level_a", "level_b",
    "n_a", "n_b", "runs", "responses", "conversations", "agents", "runs off/on",
}
#: Scale / level markers added to a metric's name in a column heading.
AFFIXES = (re.compile(r"^Δ "), re.compile(r" (÷5|\(x−1\)/4|off|on)$"), re.compile(r"\s*\([^()]*\)$"))


def metrics_block(page: str) -> str:
    """The HTML between the introduction's Metrics heading and the end of its section."""
    start = page.find("<h3>Metrics</h3>")
    assert start >= 0, "the report has no Metrics block"
    return page[start : page.index("</section>", start)]


def defined_terms(block: str) -> list[str]:
    """The text of every <b> and <code> element of the block, also split at commas."""
    terms = []
    for raw in re.findall(r"<(?:b|code)>(.*?)</(?:b|code)>", block, flags=re.S):
        text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", raw))).strip()
        terms += [text, *(part.strip() for part in text.split(","))]
    return [t for t in terms if t]


def is_defined(name: str, terms: list[str]) -> bool:
    """Whether ``name`` is a defined term; a term with a placeholder such as ``<rating>_norm``
    stands for every name of that shape."""
    for term in terms:
        pattern = "^" + re.sub(r"\\<\w+\\>|<\w+>", r"\\w+", re.escape(term)) + "$"
        if term == name or re.match(pattern, name):
            return True
    return False


def metric_names(folder) -> set[str]:
    """Every metric named by the family's CSV tables: column headings (scale and level markers
    stripped) and the values of a ``metric`` or ``rating`` column."""
    names = set()
    for path in folder.glob("*.csv"):
        if path.stem in COMMON_TABLES:
            continue
        table = pd.read_csv(path)
        for column in table.columns:
            for affix in AFFIXES:
                column = affix.sub("", column)
            names.add(column)
        for column in ("metric", "rating"):
            if column in table:
                names |= set(map(str, table[column].dropna()))
    return names - IDENTIFIERS


@pytest.mark.parametrize("game", list(FAMILIES))
def test_report_defines_its_metrics_and_writes_every_figure_and_table(game, write_study, tmp_path):
    text, headline = FAMILIES[game]
    study = load_study(write_study(text))
    db = tmp_path / "s.db"
    stats, _ = run_study(study, db, progress=False)
    assert stats.done > 0 and stats.errors == 0
    out = tmp_path / "report"
    store = Store(str(db))
    page = build_report(store, study.name, out).read_text(encoding="utf-8")
    store.dispose()

    # the Metrics block is the family module's DEFINITIONS, in the introduction
    block = metrics_block(page)
    definitions = family_definitions(*GAMES_OF.get(game, (game,)))
    assert definitions.strip() and definitions.strip() in block
    intro = page[: page.index("</section>")]
    for heading in ("<h3>Settings</h3>", "<h3>Models</h3>", "<h3>Games</h3>", "<h3>Metrics</h3>"):
        assert heading in intro, heading
    terms = defined_terms(block)
    shown = metric_names(out)
    if headline is None:
        undefined = sorted(n for n in shown if not is_defined(n, terms))
        assert not undefined, f"metrics shown but not defined: {undefined}"
    else:
        words = html.unescape(re.sub(r"<[^>]+>", " ", block))
        for name in headline:
            assert any(name.lower() in s.lower() for s in shown), f"{name} is not in any table"
            assert name in words, name
    # a formula, not a pointer to the code
    assert "=" in block and "see the code" not in page.lower()

    # every figure also as SVG, every table also as CSV, each linked from the page
    images, tables = page.count("<img"), page.count("<table")
    svgs, csvs = sorted(out.glob("*.svg")), sorted(out.glob("*.csv"))
    assert images and len(svgs) == images and len(csvs) == tables
    for path in svgs:
        assert path.read_text(encoding="utf-8").lstrip().startswith("<?xml") and f'href="{path.name}"' in page
    for path in csvs:
        assert f'href="{path.name}"' in page
    assert not [p.name for p in csvs if re.fullmatch(r"table(-\d+)?", p.stem)]  # every table has a name


def test_band_figures_become_small_multiples_beyond_eight_lines(tmp_path):
    months = range(1, 4)
    df = pd.DataFrame([{"model": f"m{k}", "month": m, "mean": k + m, "low": k, "high": k + 2 * m} for k in range(MAX_LINES + 2) for m in months])
    with artifacts(tmp_path):
        page = bands(df, "month", "mean", "model", "Ten models", "units left")
        few = bands(df[df.model.isin(["m0", "m1"])], "month", "mean", "model", "Two models", "units left")
    svg = (tmp_path / "ten-models.svg").read_text(encoding="utf-8")
    # 10 lines: two panels (8 + 2), each with its own legend; 2 lines: one panel
    assert svg.count('<g id="axes_') == 2 and svg.count('<g id="legend_') == 2
    assert (tmp_path / "two-models.svg").read_text(encoding="utf-8").count('<g id="axes_') == 1
    assert 'href="ten-models.svg"' in page and 'href="two-models.svg"' in few
