"""A self-contained HTML report of a study: common sections (played / invalid / error rates,
per-model tokens and cost), then the sections of the study's game family."""

from __future__ import annotations

import html
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from ..store.store import Store
from .frames import games_df, turns_df
from .plots import table_html


@dataclass
class Section:
    title: str
    body: str


#: game name -> "module:function(games_df, turns_df) -> list[Section]"
REPORTS: dict[str, str] = {
    "envy.points": "agorabench.games.envy.report_points:sections",
    "envy.workplace": "agorabench.games.envy.report_workplace:sections",
    "glee.bargaining": "agorabench.games.glee.report:sections",
    "glee.negotiation": "agorabench.games.glee.report:sections",
    "glee.persuasion": "agorabench.games.glee.report:sections",
    "commons": "agorabench.games.commons.report:sections",
}

STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table.data{border-collapse:collapse;font-size:.85em;margin:.5em 0}
table.data td,table.data th{border:1px solid #ddd;padding:.25em .5em;text-align:right}
figure{display:inline-block;margin:.5em} figcaption{font-size:.8em;color:#555}
.note{color:#555;font-size:.9em}
"""


def family_sections(game: str) -> Callable[[pd.DataFrame, pd.DataFrame], list[Section]] | None:
    target = REPORTS.get(game)
    if target is None:
        return None
    module, func = target.split(":")
    try:
        return getattr(importlib.import_module(module), func)
    except (ModuleNotFoundError, AttributeError):
        return None


def overview(all_games: pd.DataFrame, turns: pd.DataFrame) -> Section:
    """Played / error counts and the invalid-turn rate per model."""
    n = len(all_games)
    done = int((all_games["status"] == "done").sum()) if n else 0
    errors = n - done
    parts = [f"<p>{done} games played, {errors} aborted by backend errors (played again on the next run).</p>"]
    if n and errors:
        errs = all_games[all_games["status"] != "done"][["game_id", "error"]].head(10)
        parts.append("<p>First errors:</p>" + table_html(errs))
    if len(turns):
        per_model = (
            turns.groupby("model")
            .agg(turns=("valid", "size"), invalid_rate=("valid", lambda v: 1 - v.mean()), retries=("retries", "sum"), prompt_tokens=("prompt_tokens", "sum"), completion_tokens=("completion_tokens", "sum"), cost=("cost", "sum"), mean_latency=("latency", "mean"))
            .reset_index()
        )
        parts.append("<h3>Turns per model</h3>" + table_html(per_model))
    return Section("Overview", "\n".join(parts))


def build_report(store: Store, study: str, out_dir: str | Path, ids: set[str] | None = None, left_out: int = 0) -> Path:
    """The report of the games ``ids`` (or all stored); ``left_out`` stored games outside them are
    mentioned in a note."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    all_games = games_df(store, study, status=None, ids=ids)
    if all_games.empty:
        raise ValueError(f"no games stored for study {study!r}")
    done = all_games[all_games["status"] == "done"].copy()
    turns = turns_df(store, study, ids=ids)
    game = str(all_games["game"].iloc[0])
    sections = [overview(all_games, turns)]
    if left_out:
        sections[0].body = f"<p class='note'>{left_out} stored game(s) not in the study file's current design are left out (<code>--all</code> includes them).</p>" + sections[0].body
    family = family_sections(game)
    if family is not None and not done.empty:
        sections += family(done, turns)
    body = "\n".join(f"<section><h2>{html.escape(s.title)}</h2>\n{s.body}</section>" for s in sections)
    page = f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(study)} — agorabench report</title><style>{STYLE}</style></head><body><h1>Study {html.escape(study)} <small>({html.escape(game)})</small></h1>\n{body}</body></html>"
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
