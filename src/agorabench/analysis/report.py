"""A self-contained HTML report of a study: what the study is (description, settings, models,
game counts, metric definitions), common sections (played / invalid / error rates, per-model
tokens and cost), then the sections of the study's game family. Every figure is also written as
SVG and every table as CSV beside ``index.html``."""

from __future__ import annotations

import collections
import hashlib
import html
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .. import __version__
from ..families import definitions, report_sections
from ..core.decoding import decoding
from ..core.seats import seat_kind
from ..core.study import ModelEntry
from ..redact import redact
from ..store.store import Store
from .files import write_text
from .judged import judged_section
from .sections import guarded, not_computed, Section  # noqa: F401 - the names the families' reports import from here
from . import likeness
from .frames import games_df, people_line, study_spec, turns_df
from .plots import FIGURE_STYLE, artifacts, efforts_shown, table_html
from .reasoning import cut_off_notes, cut_off_warnings, efforts, per_model as reasoning_per_model, seated_entries, settings_columns


STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table.data{border-collapse:collapse;font-size:.85em;margin:.5em 0}
table.data td,table.data th{border:1px solid #ddd;padding:.25em .5em;text-align:right}
figcaption{font-size:.8em;color:#555}
.note{color:#555;font-size:.9em}
.warnings{border-left:4px solid #b8860b;background:#fff8e1;padding:.3em 1em;margin:1em 0}
""" + FIGURE_STYLE

#: The head's line that lets a phone lay the page out at its own width.
VIEWPORT = "<meta name='viewport' content='width=device-width, initial-scale=1'>"


def named_models_only(games: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """The games whose every seat holds a model the study file names or a person (a database
    can hold more); all games when the spec names no models (imported studies). An entry with
    several reasoning efforts names its seats ``NAME-EFFORT`` (:func:`seated_entries`)."""
    names = {m["name"] for m in seated_entries(spec.get("models") or [])}
    seats = [c for c in games.columns if c.startswith("model_")]
    if not names or not seats:
        return games
    # a person's seat ("human", "human:<participant>") is no model entry and always stays
    ok = games[seats].apply(lambda col: col.isna() | col.isin(names) | col.isin([v for v in col.dropna().unique() if isinstance(v, str) and seat_kind(v).person])).all(axis=1)
    return games[ok]


def introduction(study: str, spec: dict, games: pd.DataFrame, definitions: str) -> Section:
    """The study's description, settings, models, game counts and metric definitions."""
    parts = []
    if spec.get("description"):
        parts.append(f"<p>{html.escape(str(spec['description']))}</p>")
    settings = {k: spec[k] for k in ("game", "matchups", "repeats", "seed", "max_retries", "source", "folder") if spec.get(k) not in (None, "", [])}
    rows = [{"setting": k, "value": str(v)} for k, v in settings.items()]
    for part in spec.get("parts") or [spec]:
        prefix = f"{part['game']}: " if spec.get("parts") else ""
        for key in ("grid", "fixed"):
            for name, value in (part.get(key) or {}).items():
                rows.append({"setting": f"{prefix}{key} {name}", "value": ", ".join(map(str, value)) if isinstance(value, list) else str(value)})
        if part.get("configs"):
            rows.append({"setting": f"{prefix}configs", "value": f"{len(part['configs'])} listed"})
    if rows:
        parts.append("<h3>Settings</h3>" + table_html(pd.DataFrame(rows), name="study settings"))
    models = seated_entries(spec.get("models") or [])  # one row per seated model (NAME-EFFORT)
    if models:
        mt = pd.DataFrame([{"name": m.get("name"), "label": m.get("display_name") or m.get("name"), "spec": m.get("spec"), "parameters": ", ".join(f"{k} = {v}" for k, v in sorted((m.get("params") or {}).items())), "temperature": _temperature(m, spec), "max_tokens": m.get("max_tokens"), "constrained decoding": m.get("constrained")} for m in models])
        for heading, values in settings_columns(models).items():  # only the reasoning settings some model sets
            mt[heading] = values
        parts.append("<h3>Models</h3>" + table_html(mt, name="study models"))
    seats = [c for c in games.columns if c.startswith("model_")]
    if len(games):
        counts = games.groupby(["game", "status"]).size().unstack(fill_value=0).reset_index()
        counts.columns.name = None  # the status values head their columns; no empty "status" cell
        parts.append("<h3>Games</h3>" + table_html(counts, name="game counts"))
        if seats:
            per_model = pd.concat([games[c].rename("model") for c in seats]).value_counts().rename_axis("model").reset_index(name="seats taken")
            parts.append(table_html(per_model, name="seats per model"))
        pooled = people_line(games)
        if pooled:  # every participant is the one model "human" in the tables below
            parts.append(f"<p class='note' id='people'>People are pooled as one model in every table, figure and regression ({html.escape(pooled)}); intervals of the human rows are clustered by participant. <code>agora export --table participants</code> has each person.</p>")
    if definitions:
        parts.append("<h3>Metrics</h3>" + definitions)
    return Section("The study", "\n".join(parts))


def _temperature(model: dict, spec: dict) -> str:
    """How a model entry samples, as the report states it: only a language model this process
    calls samples (:attr:`SeatKind.called`); what its calls send is the runner's own rule
    (:func:`agorabench.core.decoding.decoding`): ``default`` sends neither temperature nor seed
    (the provider's own sampling), a reasoning model of OpenAI or Anthropic no temperature, any
    other a number with the study's seed."""
    if not seat_kind(model).called:
        return "-"
    t = model.get("temperature", 0.0)
    seed = spec.get("seed", 0)
    try:
        unsent = decoding(ModelEntry(**{k: v for k, v in model.items() if k in ModelEntry.model_fields}), int(seed or 0)).unsent
    except (ValueError, TypeError):  # an entry of another version: as it was written
        unsent = "default" if t == "default" else None
    if unsent == "default":
        return "provider default (none sent, no seed)"
    if unsent == "reasoning":
        return f"provider default (none sent: the model reasons; {t} set)"
    return f"{t} (seed {seed})"


def provenance(store: Store, spec: dict, prompts: dict[tuple[str, str], int] | None = None) -> str:
    """One line saying where the report comes from: when it was made, by which agorabench, from
    which database (its size, for a file), which study file (a hash of the stored study file,
    so two reports of one study can be told apart when the file changed) and which prompt
    templates (``prompts``: (game, prompt version) -> how many of the report's games were
    played with it)."""
    where = redact(store.db)
    path = Path(store.db)
    if "://" not in store.db and path.is_file():
        where += f" ({path.stat().st_size / 2**20:,.1f} MiB)"
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12]
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    versions = "; prompt versions " + ", ".join(f"{game} {version or '?'} ({n} games)" for (game, version), n in sorted(prompts.items())) if prompts else ""
    return f"<p class='note' id='provenance'>Generated {made} by agorabench {html.escape(__version__)} from {html.escape(where)}; study file sha256 {digest}{html.escape(versions)}.</p>"


#: A model whose share of invalid turns is above this is named in the report's warnings.
INVALID_WARNING = 0.2


def warnings_block(all_games: pd.DataFrame, turns: pd.DataFrame, left_out: int, spec: dict | None = None) -> str:
    """What a reader must know before trusting the tables, at the top of the report: models
    whose answers were mostly unusable (invalid rate above :data:`INVALID_WARNING`; their turns
    fell back to the game's defaults), models with replies cut off at the output token limit
    that the runner stored as invalid (the advice follows the model's entry in ``spec``), games
    aborted by errors, and stored games left out. Every count is of the stored validity: a
    cut-off turn whose choice was complete is valid and only noted in the overview."""
    items = []
    if len(turns) and "model" in turns:
        rates = turns.groupby("model")["valid"].agg(lambda v: 1 - v.astype(bool).mean())
        for model, rate in rates[rates > INVALID_WARNING].sort_values(ascending=False).items():
            items.append(f"{html.escape(str(model))}: {rate:.0%} of its turns were invalid and fell back to the game's defaults; its results describe those defaults as much as the model.")
        items += cut_off_warnings(turns, spec)
    errors = int((all_games["status"] != "done").sum()) if len(all_games) else 0
    if errors:
        items.append(f"{errors} of {len(all_games)} games ended in an error and are not in the analyses (the next run plays them again).")
    if left_out:
        items.append(f"{left_out} stored game(s) outside the study file's current design are left out (<code>--all</code> includes them).")
    if not items:
        return ""
    return "<div class='warnings' id='warnings'><b>Warnings</b><ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul></div>"


def overview(all_games: pd.DataFrame, turns: pd.DataFrame, spec: dict | None = None) -> Section:
    """Played / error counts and the invalid-turn rate per model; for a study whose turns show
    reasoning, or whose study file ``spec`` gives a model a reasoning setting, also each model's
    reasoning tokens and cut-off turns (:func:`~agorabench.analysis.reasoning.per_model`), and a note
    per model on its valid turns that were cut off after their choice was complete."""
    n = len(all_games)
    done = int((all_games["status"] == "done").sum()) if n else 0
    errors = n - done
    parts = [f"<p>{done} games played, {errors} aborted by backend errors (played again on the next run).</p>"]
    if n and errors:
        errs = all_games[all_games["status"] != "done"][["game_id", "error"]].head(10)
        parts.append("<p>First errors:</p>" + table_html(errs, name="first errors"))
    if len(turns):
        per_model = (
            turns.groupby("model")
            .agg(turns=("valid", "size"), invalid_rate=("valid", lambda v: 1 - v.mean()), retries=("retries", "sum"), prompt_tokens=("prompt_tokens", "sum"), completion_tokens=("completion_tokens", "sum"), cost=("cost", "sum"), mean_latency=("latency", "mean"))
            .reset_index()
        )
        thoughts = reasoning_per_model(turns, reasoning_models=bool(settings_columns(seated_entries((spec or {}).get("models") or []))))
        if thoughts is not None:
            per_model = per_model.merge(thoughts, on="model", how="left")
        parts.append("<h3>Turns per model</h3>" + table_html(per_model, name="turns per model"))
        unknown = turns[turns["prompt_tokens"].isna() | turns["completion_tokens"].isna()] if {"prompt_tokens", "completion_tokens"} <= set(turns.columns) else turns.iloc[:0]
        if len(unknown):  # NULL counts: a server that reported none, a call that timed out
            who = ", ".join(html.escape(str(m)) for m in dict.fromkeys(unknown["model"].astype(str)))
            parts.append(f"<p class='note'>{len(unknown)} turn(s) ({who}) have token counts unknown (the server reported none, or the call timed out): they are left out of the sums above.</p>")
        parts += [f"<p class='note'>{line}</p>" for line in cut_off_notes(turns)]
        bill = spend(turns)
        if bill is not None:
            parts.append(
                "<h3>Spend</h3><p class='note'>The calls each model was billed for (answers from the response cache cost nothing), by the tier "
                "they were billed at: prompt tokens read from the provider's prompt cache (<i>cached input</i>), written to it (<i>cache writes</i>) "
                "and the rest (<i>input</i>), output tokens and dollars at the study file's prices.</p>" + table_html(bill, name="spend")
            )
    return Section("Overview", "\n".join(parts))


def spend(turns: pd.DataFrame) -> pd.DataFrame | None:
    """What the turns' calls were billed: per model and billed tier (``standard`` for turns
    billed at it), turns, input tokens (not from the prompt cache), cached input, cache writes,
    output tokens and dollars, over the turns not answered from the response cache; None when no
    such turn used a prompt cache, another tier or any money (nothing the per-model table does
    not already say)."""
    needed = {"model", "cached", "prompt_tokens", "completion_tokens", "cost"}
    if not len(turns) or not needed <= set(turns.columns):
        return None
    bought = turns[~turns["cached"].fillna(False).astype(bool)]
    if not len(bought):
        return None
    zeros = pd.Series(0, index=bought.index)
    cached = bought["cached_tokens"] if "cached_tokens" in bought else zeros
    written = bought["cache_write_tokens"] if "cache_write_tokens" in bought else zeros
    tier = bought["tier"].astype(object).where(bought["tier"].notna(), "standard") if "tier" in bought else pd.Series("standard", index=bought.index)
    if not (cached.sum() or written.sum() or bought["cost"].sum() or (tier != "standard").any()):
        return None
    frame = pd.DataFrame({
        "model": bought["model"], "tier": tier, "turns": 1,
        "input": (bought["prompt_tokens"] - cached - written).clip(lower=0), "cached input": cached, "cache writes": written,
        "output": bought["completion_tokens"], "cost": bought["cost"],
    })
    return frame.groupby(["model", "tier"], sort=True).sum().reset_index()


def family_sections(done: pd.DataFrame, turns: pd.DataFrame, order: list[str] | None = None) -> list[Section]:
    """The sections of every family whose games the study played, each family's report given
    only its own games and followed by the comparison of those games with people where they
    have human reference data (:mod:`~.likeness`). A study of several families (the classic
    battery) gets each in the order of ``order`` (its games as the study file lists them),
    every title led by the family's games; a family reporting several games gets them
    together."""
    present = [str(g) for g in dict.fromkeys(done["game"].astype(str))]
    games = [g for g in (order or []) if g in present] + [g for g in present if g not in (order or [])]
    hooks: dict[object, list[str]] = {}
    for game in games:
        hooks.setdefault(report_sections(game) or ("none", game), []).append(game)
    out: list[Section] = []
    for hook, names in hooks.items():
        if len(hooks) == 1:  # one family: its games as they are (its report reads the study's attrs)
            sub_games, sub_turns = done, turns
        else:
            sub_games = done[done["game"].isin(names)].dropna(axis=1, how="all").copy()
            sub_games.attrs = dict(done.attrs)
            sub_turns = turns[turns["game_id"].isin(sub_games["game_id"])].dropna(axis=1, how="all") if len(turns) else turns
        title = f"{names[0]} analyses" if len(names) == 1 else f"{', '.join(names)} analyses"
        found = guarded(title, lambda: hook(sub_games, sub_turns)) if callable(hook) else []
        if len(hooks) > 1:
            lead = ", ".join(names)
            for section in found:
                section.title = f"{lead}: {section.title}"
        out += found + likeness.report_sections(sub_games, sub_turns)
    return out


def build_report(store: Store, study: str, out_dir: str | Path, spec: dict | None = None, ids: set[str] | None = None, left_out: int = 0) -> Path:
    """Write ``out_dir/index.html`` (plus SVG/CSV files; all renamed into place together when the
    report is whole, so a failed write keeps an earlier report and raises
    :class:`~agorabench.analysis.files.OutputError`). ``spec``: the study file as a dict
    (default: the one stored with the study); only games of the models it names are reported. ``ids``: only these games (the
    study file's current design); ``left_out`` stored games outside them are mentioned in a note."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stored = store.game_columns(study)  # read once for both frames
    all_games = games_df(store, study, status=None, ids=ids, games=stored)
    prompt_of = dict(zip(stored["id"], zip(stored["game"], stored["prompt_version"])))  # for the provenance line
    stored = {k: stored[k] for k in ("id", "seats", "config")}  # all the turns frame needs of them
    if all_games.empty:
        raise ValueError(f"no games stored for study {study!r}")
    spec = spec if spec is not None else study_spec(store, study)
    all_games = named_models_only(all_games, spec)
    if all_games.empty:
        raise ValueError(f"no games of study {study!r} seat only the models its study file names")
    prompts = dict(collections.Counter(prompt_of[g] for g in all_games["game_id"]))
    del prompt_of
    done = all_games[all_games["status"] == "done"].copy()
    done.attrs["spec"] = spec
    turns = turns_df(store, study, ids=ids, transcripts=False, games=stored)
    del stored
    turns = turns[turns["game_id"].isin(all_games["game_id"])] if len(turns) else turns
    present = [str(g) for g in dict.fromkeys(all_games["game"])]  # the games stored, first seen first
    path = out / "index.html"
    # every file goes to a temporary name and all are renamed into place once the page is
    # written (files.staged): a report that fails midway (a full disk) leaves the earlier one whole
    with artifacts(out), efforts_shown(efforts(spec)):
        compared = likeness.has_references(present)
        sections = [introduction(study, spec, all_games, definitions(*present) + (likeness.DEFINITIONS if compared else "")), overview(all_games, turns, spec)]
        if left_out:
            sections[1].body = f"<p class='note'>{left_out} stored game(s) not in the study file's current design are left out (<code>--all</code> includes them).</p>" + sections[1].body
        if not done.empty:
            sections += family_sections(done, turns, [p.get("game") for p in spec.get("parts") or []])
            sections += guarded("What the messages say", lambda: judged_section(store, study, set(done["game_id"])))  # agora judge's codes, if any
        body = "\n".join(f"<section><h2>{html.escape(s.title)}</h2>\n{s.body}</section>" for s in sections)
        page = f"<!doctype html><html><head><meta charset='utf-8'>{VIEWPORT}<title>{html.escape(study)} — agorabench report</title><style>{STYLE}</style></head><body><h1>Study {html.escape(study)} <small>({html.escape(', '.join(present))})</small></h1>\n{provenance(store, spec, prompts)}\n{warnings_block(all_games, turns, left_out, spec)}\n{body}</body></html>"
        write_text(path, page)
    return path
