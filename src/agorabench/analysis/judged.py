"""Judgements in reports and exports (``agora judge`` stores them, :mod:`agorabench.store.judgements`).

The report's section "What the messages say" gives, per judge and taxonomy, each label's share of
the validly coded messages per speaker model and condition (the configuration values that vary
among the study's games), with a 95 % percentile bootstrap interval that resamples games (a
game's messages are not independent of each other), and each judge's invalid replies. The export
writes every stored judgement as one row (:func:`judgements_df`).
"""

from __future__ import annotations

import html
import json
from typing import Any

import numpy as np
import pandas as pd

from ..store import judgements as table
from ..store.store import Store
from ..core.seats import PERSON, SeatKind, seat_kind
from .plots import table_html
from .sections import Section

REPS = 500


def _model(seat: str) -> str:
    """The speaker as the analyses count it: every person's seat as ``human`` (as
    :func:`agorabench.analysis.frames.analysis_model`, which this module cannot import: the
    export imports this one)."""
    return PERSON if isinstance(seat, str) and seat_kind(seat) is SeatKind.PERSON else seat


def judgements_df(store: Store, study: str, ids: set[str] | None = None) -> pd.DataFrame:
    """Every stored judgement of the study's games (``ids`` only, if given), one row each;
    ``labels`` joined by ``|`` (empty for an invalid reply)."""
    rows = [r for r in table.read(store.engine, study) if ids is None or r["game_id"] in ids]
    df = pd.DataFrame(rows, columns=table.COLUMNS)
    if len(df):
        df["labels"] = ["|".join(x) if isinstance(x, list) else "" for x in df["labels"]]
    return df


def _conditions(configs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """game id -> its condition: the configuration values that vary among the games ('' if none)."""
    keys: dict[str, set[str]] = {}
    for cfg in configs.values():
        for k, v in (cfg or {}).items():
            keys.setdefault(k, set()).add(json.dumps(v, sort_keys=True, default=str))
    varying = sorted(k for k, vals in keys.items() if len(vals) > 1 or any(k not in (c or {}) for c in configs.values()))
    return {g: ", ".join(f"{k}={(cfg or {}).get(k)}" for k in varying) for g, cfg in configs.items()}


def _interval(per_game: pd.DataFrame, rng: np.random.Generator) -> tuple[float, float]:
    """95 % percentile interval of sum(hits) / sum(n) over games resampled with replacement."""
    hits, n = per_game["hits"].to_numpy(float), per_game["n"].to_numpy(float)
    if len(n) < 2:
        return float("nan"), float("nan")
    draw = rng.integers(0, len(n), size=(REPS, len(n)))
    shares = hits[draw].sum(1) / np.maximum(n[draw].sum(1), 1)
    return float(np.quantile(shares, 0.025)), float(np.quantile(shares, 0.975))


def label_shares(store: Store, study: str, ids: set[str] | None = None, seed: int = 0) -> pd.DataFrame:
    """Per judge, taxonomy, speaker model, condition and label: messages, share, low, high."""
    df = judgements_df(store, study, ids)
    if df.empty:
        return pd.DataFrame()
    configs = {g["id"]: g.get("config") or {} for g in store.games(study) if g["id"] in set(df["game_id"])}
    cond = _conditions(configs)
    df["condition"] = [cond.get(g, "") for g in df["game_id"]]
    df["model"] = [_model(s) for s in df["speaker"]]
    rng = np.random.default_rng(seed)
    out = []
    seen = {key: sorted({x for v in g.loc[g["valid"].astype(bool), "labels"] for x in v.split("|") if x}) for key, g in df.groupby(["judge", "taxonomy"])}
    for (judge, tax, model, condition), cell in df.groupby(["judge", "taxonomy", "model", "condition"], sort=True):
        valid = cell[cell["valid"].astype(bool)]
        if valid.empty:
            continue
        for label in seen[(judge, tax)]:  # every label the judge gave anywhere, 0 where absent
            hit = valid["labels"].map(lambda v, lab=label: lab in v.split("|"))
            per_game = pd.DataFrame({"game": valid["game_id"], "hits": hit.astype(int), "n": 1}).groupby("game")[["hits", "n"]].sum()
            low, high = _interval(per_game, rng)
            out.append({"judge": judge, "taxonomy": tax, "model": model, "condition": condition, "label": label, "messages": len(valid), "share": float(hit.mean()), "low": low, "high": high})
    return pd.DataFrame(out)


def judged_section(store: Store, study: str, ids: set[str] | None = None) -> Section | None:
    """The report's section on the judgements, or None when the study was never judged."""
    df = judgements_df(store, study, ids)
    if df.empty:
        return None
    parts = ["<p>Messages coded by an LLM judge (<code>agora judge</code>): each label's share of the validly coded messages, per speaker model and condition, with a 95 % bootstrap interval over games. A multi-label taxonomy's shares may add up to more than 1.</p>"]
    summary = df.groupby(["judge", "taxonomy"]).agg(messages=("message_id", "size"), invalid=("valid", lambda v: int((~v.astype(bool)).sum()))).reset_index()
    parts.append(table_html(summary, name="Judged messages", note="Messages each judge coded, and replies that were no label after the re-asks."))
    shares = label_shares(store, study, ids)
    if not shares.empty:
        for (judge, tax), sub in shares.groupby(["judge", "taxonomy"], sort=True):
            parts.append(table_html(sub.drop(columns=["judge", "taxonomy"]).reset_index(drop=True), name=f"Label shares, {judge}, {tax}", note=f"Judge {html.escape(str(judge))}, taxonomy {html.escape(str(tax))}."))
    return Section("What the messages say", "\n".join(parts))
