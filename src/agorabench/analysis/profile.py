"""One behavioural profile per model across the game families: ``agora profile DB [DB ...]``.

Every database is read whole (all its studies); each game family present contributes rows
through the ``profiles`` hook of its family's manifest (``profile_rows(games, turns) -> DataFrame``). A row is
one measure of one model (or of a theory baseline):

    family, section, measure, role, model, effort, estimate, low, high, n, kind, database, source, note

``kind`` is ``model`` for a played model, ``theory`` for a reference row (self-maximiser,
inequity-averse, subgame-perfect, Bayesian, sustainable) and ``reference`` for human reference data
shipped with agorabench (``human (reference)``: the human-likeness section of the games that have
such data, :mod:`~.likeness`, with each model's mean likeness across the battery); ``database`` is
the short name of the database the row comes from (its file's stem, with as many of its parent
folders as tell it from another database of the profile; ``all`` for rows computed across every
database), ``source`` names the database and studies the row comes from. Models are matched across databases by their study name: the page
has one table per section with a row per model, so a model's envy, GLEE and commons numbers
line up; in a section whose rows come from several databases every cell names its database
(``0.42 [0.30, 0.55] (pilot)``) and the forest plot has one point per model and database. The
CSV keeps the long rows. ``effort`` is the reasoning effort the model was run with,
read from the stored study files (empty for a model without one, and for theory rows); the
page's tables show it beside the model only when some model has one. The people of served
studies are one model, ``human`` (the frames pool them, :func:`~.frames.analysis_model`), with
intervals clustered by participant; its rows' ``note`` says how many people and games it holds.

Design-adjusted means (GLEE) come from the GLEE regression
(:func:`agorabench.analysis.regression.adjusted_means` over the family's design, intervals
clustered by model pair, a person's games by participant): the mean over every game of the model's predictions with that model
in the seat (standardisation over the study's own mix of parameters and opponents).
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from ..families import families, profile_hook
from ..store.store import Store
from . import likeness
from .files import write_csv, write_text
from .frames import HUMAN, games_df, people_line, study_spec, turns_df
from .plots import artifacts, forest, with_interval
from .reasoning import efforts
from .report import STYLE, VIEWPORT

#: Kinds of rows: a played model, a theory baseline, human reference data shipped with agorabench.
KINDS = ["model", "theory", "reference"]

COLUMNS = ["family", "section", "measure", "role", "model", "effort", "estimate", "low", "high", "n", "kind", "database", "source", "note"]

#: The ``database`` of rows computed across every database of a profile.
ALL_DATABASES = "all"

def row(family: str, section: str, measure: str, model: str, estimate: float, low: float = math.nan, high: float = math.nan, n: int | float = math.nan, role: str = "", kind: str = "model", note: str = "") -> dict:
    """One profile row (see module doc); ``database``, ``source`` and ``effort`` are filled in by :func:`collect`."""
    return {"family": family, "section": section, "measure": measure, "role": role, "model": model, "effort": "", "estimate": estimate, "low": low, "high": high, "n": n, "kind": kind, "database": "", "source": "", "note": note}


#: The profile section where every family's structural estimates stand side by side.
STRUCTURAL_FAMILY, STRUCTURAL_SECTION = "structural estimates", "models of choice fitted by maximum likelihood"


def structural_rows(model_name: str, model: str, params: dict[str, tuple[float, float, float]], loglik: float, bic: float, n: int | float, note: str = "") -> list[dict]:
    """Rows of one structural model fitted to one model's decisions (``model_name``: the game and
    the model of choice, e.g. ``prisoners_dilemma: logit QRE``): each parameter as (estimate,
    low, high), then its log-likelihood and BIC (k·ln n − 2ℓ̂), so that the families' fits
    (Fehr–Schmidt, logit QRE, cognitive hierarchy, level-k) stand in one table and fits of the
    same decisions can be compared."""
    out = [row(STRUCTURAL_FAMILY, STRUCTURAL_SECTION, f"{model_name} {name}", model, est, low, high, n, note=note) for name, (est, low, high) in params.items()]
    out.append(row(STRUCTURAL_FAMILY, STRUCTURAL_SECTION, f"{model_name} log-likelihood", model, loglik, n=n, note=note))
    out.append(row(STRUCTURAL_FAMILY, STRUCTURAL_SECTION, f"{model_name} BIC", model, bic, n=n, note=note))
    return out


def store_efforts(store: Store) -> dict[str, str]:
    """Model name -> reasoning effort over every study the database holds (its stored study
    files and recorded runs); a name seated with two efforts in two studies keeps the first."""
    found: dict[str, str] = {}
    for study in store.studies():
        for name, effort in efforts(study_spec(store, study["name"])).items():
            found.setdefault(name, effort)
    return found


def merged_spec(specs: Sequence[dict]) -> dict:
    """One study file for the games of several studies of a database (what the analyses read
    from ``games.attrs["spec"]``, e.g. the reference rule): every study's models in order, the
    first of each name kept, and the first ``[analysis]`` table any of them has."""
    models: dict[str, dict] = {}
    analysis: dict = {}
    for spec in specs:
        for entry in spec.get("models") or []:
            models.setdefault(entry.get("name"), entry)
        analysis = analysis or dict(spec.get("analysis") or {})
    out: dict = {"models": list(models.values())} if models else {}
    if analysis:
        out["analysis"] = analysis
    return out


def collect(stores: Sequence[tuple[str, Store]], studies: Sequence[str | None] | None = None) -> pd.DataFrame:
    """Profile rows of every database (``(label, store)`` pairs; ``label``: the database's short
    name, :func:`database_labels`), long format; ``studies``: per database the one study to read
    (None: all its studies). A family's
    profile hook may carry ``relate(rows) -> DataFrame`` (an attribute of the hook function):
    it is called once with every family's rows of every database and its rows are added, for
    measures that pair one family's numbers with another's (sub-skills beside survival)."""
    parts = []
    related: dict[Callable, None] = {}  # relate hooks of the families seen, in order
    for (label, store), study in zip(stores, studies or [None] * len(stores)):
        games = games_df(store, study)
        if games.empty:
            continue
        turns = turns_df(store, study)
        found = store_efforts(store)
        where = Path(store.db).name if "://" not in store.db else label  # the file's name in ``source``
        hooks: dict[Callable, list[str]] = {}
        for game in games["game"].unique():
            hook = profile_hook(game)
            if hook is not None:
                hooks.setdefault(hook, []).append(game)
                if callable(getattr(hook, "relate", None)):
                    related[hook.relate] = None
        for hook, names in hooks.items():
            sub = games[games["game"].isin(names)].copy()
            sub.attrs["spec"] = merged_spec([study_spec(store, str(name)) for name in sorted(sub["study"].unique())])
            sub_turns = turns[turns["game_id"].isin(sub["game_id"])] if len(turns) else turns
            try:
                rows = hook(sub.dropna(axis=1, how="all"), sub_turns)
            except Exception as exc:  # noqa: BLE001 - one family's failed estimate is a row saying so, not a lost profile
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                rows = pd.DataFrame([row(names[0], "not computed", "analysis", "", math.nan, note=reason)])
            if rows is None or rows.empty:
                continue
            studies = ", ".join(sorted(sub["study"].unique()))
            rows = rows.assign(database=label, source=f"{where} ({studies})")
            pooled = people_line(sub)
            if pooled:  # the pooled human rows say how many people and games they hold
                people = (rows["model"] == HUMAN) & (rows["kind"] == "model")
                rows.loc[people, "note"] = [f"{pooled}; {n}" if isinstance(n, str) and n else pooled for n in rows.loc[people, "note"]]
            rows["effort"] = [found.get(str(m), "") if k == "model" else "" for m, k in zip(rows["model"], rows["kind"])]
            parts.append(rows)
        parts += _likeness(label, where, games, turns, found)
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    rows = pd.concat(parts, ignore_index=True)[COLUMNS]
    extra = []
    across = battery_rows(rows)
    if not across.empty:
        extra.append(across.assign(database=ALL_DATABASES, source="all databases", effort=""))
    for relate in related:  # across databases and families: after every family's rows are in
        try:
            more = relate(rows)
        except Exception as exc:  # noqa: BLE001 - a failed pairing is a row saying so, not a lost profile
            more = pd.DataFrame([row("profile", "not computed", "relation", "", math.nan, note=" ".join(f"{type(exc).__name__}: {exc}".split())[:300])])
        if more is not None and not more.empty:
            extra.append(more.assign(database=ALL_DATABASES, source="all databases", effort=""))
    return pd.concat([rows, *extra], ignore_index=True)[COLUMNS] if extra else rows


#: The profile section of human-likeness (one table across the battery of games with human data).
LIKENESS_FAMILY, LIKENESS_SECTION = "people as the yardstick", "human-likeness (behavioural Turing score)"
#: The measure of each model's mean likeness over every game measure it was compared on.
ACROSS = "across the battery"


def _likeness(label: str, where: str, games: pd.DataFrame, turns: pd.DataFrame, found: dict[str, str]) -> list[pd.DataFrame]:
    """The human-likeness rows of one database's games that have human reference data
    (:func:`~.likeness.likeness_rows`: a model's likeness per game measure with its interval,
    the reference's 0.5), or a row saying why they could not be computed."""
    if not likeness.has_references(games["game"].astype(str).unique()):
        return []
    try:
        table = likeness.likeness_rows(games, turns)
        rows = pd.DataFrame([row(LIKENESS_FAMILY, LIKENESS_SECTION, r["measure"], r["model"], r["estimate"], r["low"], r["high"], r["n"], kind=r["kind"]) for _, r in table.iterrows()], columns=COLUMNS)
    except Exception as exc:  # noqa: BLE001 - a failed comparison is a row saying so, not a lost profile
        rows = pd.DataFrame([row(LIKENESS_FAMILY, "not computed", "human-likeness", "", math.nan, note=" ".join(f"{type(exc).__name__}: {exc}".split())[:300])])
    if rows.empty:
        return []
    rows = rows.assign(database=label, source=f"{where} ({', '.join(sorted(games['study'].unique()))})")
    rows["effort"] = [found.get(str(m), "") if k == "model" else "" for m, k in zip(rows["model"], rows["kind"])]
    return [rows]


def battery_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model, the mean likeness over every game measure of ``rows`` (the likeness rows of
    every database) it was compared on, without an interval (its note lists the measures), and
    the reference's 0.5; empty when ``rows`` holds no likeness row."""
    mine = rows[(rows["family"] == LIKENESS_FAMILY) & (rows["section"] == LIKENESS_SECTION) & (rows["measure"] != ACROSS)]
    if mine.empty:
        return pd.DataFrame()
    out = []
    for model, sub in mine[mine["kind"] == "model"].groupby("model", sort=True):
        values = pd.to_numeric(sub["estimate"], errors="coerce")
        out.append(row(LIKENESS_FAMILY, LIKENESS_SECTION, ACROSS, str(model), float(values.mean()), n=int(values.notna().sum()), note="mean likeness over " + "; ".join(dict.fromkeys(sub["measure"]))))
    out.append(row(LIKENESS_FAMILY, LIKENESS_SECTION, ACROSS, likeness.REFERENCE, 0.5, kind="reference", note="people against people: 0.5 by symmetry"))
    return pd.DataFrame(out)


def _cell(r: pd.Series, named: bool = False) -> str:
    """``estimate [low, high]`` in the one number format of :func:`~.plots.number` (three
    decimals, no scientific notation); ``named``: followed by the row's database in brackets."""
    est = r["estimate"]
    if est is None or (isinstance(est, float) and math.isnan(est)):
        text = "–"
    else:
        text = with_interval(float(est), float(r["low"]) if pd.notna(r["low"]) else None, float(r["high"]) if pd.notna(r["high"]) else None)
    return f"{text} ({r['database']})" if named and isinstance(r.get("database"), str) and r["database"] else text


def several_databases(rows: pd.DataFrame) -> bool:
    """Whether ``rows`` come from more than one database (the rows computed across all of them
    count as one more): then every cell and forest point names its database."""
    return "database" in rows and rows["database"].fillna("").astype(str).replace("", pd.NA).nunique() > 1


def database_labels(dbs: Sequence[str]) -> list[str]:
    """A short name for each database of a profile, in order: a file's stem (``runs/pilot.db``
    -> ``pilot``), a URL's database name; two alike get as many parent folders as tell them
    apart (``a/pilot``, ``b/pilot``), and a name still shared (the same file given twice) a
    number (``pilot #2``)."""
    parts: list[list[str]] = []
    for db in dbs:
        if "://" in db:
            name = db.split("?")[0].rstrip("/").split("/")[-1] or db
            parts.append([Path(name).stem if name.endswith((".db", ".sqlite", ".sqlite3")) else name])
        else:
            path = Path(db).resolve()
            parts.append([*[p for p in path.parent.parts if p not in ("/", "")], path.stem or path.name])
    depth = [1] * len(parts)
    while True:
        names = ["/".join(p[-d:]) for p, d in zip(parts, depth)]
        clash = [i for i, n in enumerate(names) if depth[i] < len(parts[i]) and any(m == n and parts[j] != parts[i] for j, m in enumerate(names))]
        if not clash:
            break
        for i in clash:
            depth[i] += 1
    out: list[str] = []
    for name in names:
        out.append(name if name not in out else f"{name} #{sum(1 for o in out if o == name or o.startswith(name + ' #')) + 1}")
    return out


#: Sections with more models (and roles) than this get no forest plot (a figure of unreadable height).
FOREST_MAX_ROWS = 40


def section_forest(rows: pd.DataFrame, title: str) -> str:
    """One forest plot per section: a panel per measure with an interval somewhere (its own x
    axis), a row per model and role with its interval (per model, role and database when the
    section's rows come from several databases, each row's label naming its database); theory
    rows drawn without one. '' when no measure has an interval."""
    shown = rows[pd.to_numeric(rows["estimate"], errors="coerce").notna()].copy()
    if shown.empty:
        return ""
    shown["who"] = shown["model"].astype(str) + shown["role"].map(lambda r: f" ({r})" if isinstance(r, str) and r else "")
    shown["who"] = shown["who"] + shown["kind"].map(lambda k: " [theory]" if k == "theory" else "")  # a reference row's name says it
    if several_databases(shown):  # one point per model and database, each labelled with its database
        shown["who"] = shown["who"] + shown["database"].map(lambda d: f" · {d}" if isinstance(d, str) and d else "")
    for c in ("estimate", "low", "high"):
        shown[c] = pd.to_numeric(shown[c], errors="coerce")
    # an interval cut to the metric's range can miss an estimate a rounding error outside it
    # (-1e-17 against [0, ...]): the whiskers reach the estimate, never a negative length
    shown["low"] = shown["low"].fillna(shown["estimate"]).clip(upper=shown["estimate"])
    shown["high"] = shown["high"].fillna(shown["estimate"]).clip(lower=shown["estimate"])
    shown = shown.drop_duplicates(["who", "measure"])
    # a panel for each measure some row of which has an interval: fit statistics (log-likelihood,
    # BIC) and means without one stay in the table, where they are read
    spread = shown["high"] > shown["low"]
    shown = shown[shown["measure"].isin(set(shown.loc[spread, "measure"]))]
    if shown.empty:
        return ""
    if shown["who"].nunique() > FOREST_MAX_ROWS:
        return f"<p class='note'>No forest plot: more than {FOREST_MAX_ROWS} rows.</p>"
    return forest(shown, "who", "measure", title, "estimate (95% interval)", ref=None)


def section_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of one section as a grid: one line per (kind, model, role), one column per measure,
    cells ``estimate [low, high]``, each followed by its database's short name when the
    section's rows come from several databases (a model measured in two databases has both
    values in its cell, ``; ``-separated); theory rows last. The model's reasoning effort follows
    its name when some model of the section has one."""
    named = several_databases(rows)
    cells = rows.assign(cell=rows.apply(lambda r: _cell(r, named), axis=1))
    keys = ["kind", "model", "effort", "role"] if "effort" in rows and (rows["effort"].fillna("") != "").any() else ["kind", "model", "role"]
    if "effort" in keys:
        cells["effort"] = cells["effort"].fillna("")
    grid = cells.pivot_table(index=keys, columns="measure", values="cell", aggfunc=lambda v: "; ".join(v))
    order = list(dict.fromkeys(rows["measure"]))
    grid = grid.reindex(columns=order).reset_index()
    grid["kind"] = pd.Categorical(grid["kind"], KINDS)
    grid = grid.sort_values(["kind", "model", "role"]).fillna("–")
    grid.columns.name = None
    return grid


def write_profile(rows: pd.DataFrame, out_dir: str | Path, title: str = "Behavioural profiles") -> tuple[Path, Path]:
    """``OUT/profile.html`` (one table and one forest plot per family section, a panel per
    measure; each plot also ``OUT/NAME.svg``, opened at full size by a click on it) and
    ``OUT/profile.csv`` (long rows), renamed into place together once all are written (a failed
    write raises :class:`~agorabench.analysis.files.OutputError` and keeps the earlier files)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, html_path = out / "profile.csv", out / "profile.html"
    with artifacts(out):  # all renamed into place together once all are written: a failed write keeps the earlier files
        write_csv(rows, csv_path, index=False)
        write_text(html_path, _page(rows, title))
    return html_path, csv_path


def _page(rows: pd.DataFrame, title: str) -> str:
    """The profile page of :func:`write_profile`."""
    models = sorted(set(rows.loc[rows["kind"] == "model", "model"]))
    parts = [
        f"<p>{len(models)} models: {html.escape(', '.join(models))}. Each cell: estimate [95% interval]. "
        "Rows marked <em>theory</em> are reference baselines computed for the same designs; <em>reference</em> rows are human data shipped with agorabench (sources in each game's report). The CSV beside this page holds every row with its source.</p>"
    ]
    for (family, section), sub in rows.groupby(["family", "section"], sort=False):
        notes = sorted({n for n in sub["note"] if isinstance(n, str) and n})
        sources = sorted(set(sub["source"]))
        body = section_table(sub).to_html(index=False, classes="data", border=0, escape=True)
        body += section_forest(sub, f"{family}: {section}")
        body += "".join(f"<p class='note'>{html.escape(n)}</p>" for n in notes)
        body += f"<p class='note'>Data: {html.escape('; '.join(sources))}</p>"
        parts.append(f"<section><h2>{html.escape(family)}: {html.escape(section)}</h2>{body}</section>")
    return f"<!doctype html><html><head><meta charset='utf-8'>{VIEWPORT}<title>{html.escape(title)}</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>"


def build_profile(dbs: Sequence[str], out_dir: str | Path, studies: Sequence[str | None] | None = None) -> tuple[Path, Path]:
    """Profiles of every model in the databases ``dbs`` (paths or URLs); ``studies``: per
    database the one study to read (None: all of them)."""
    stores = [(label, Store(db)) for label, db in zip(database_labels(dbs), dbs)]
    rows = collect(stores, studies)
    if rows.empty:
        profiled = sorted({f.name for f in families().values() if f.profiles})
        raise ValueError(f"no finished games of a profiled family ({', '.join(profiled)}) in " + ", ".join(dbs))
    return write_profile(rows, out_dir)
