"""Dataframes of a study for notebooks, reports and export.

``games_df``: one row per game — id, study, game, status, repeat, ``model_<role>`` for each
seat, every config parameter as its own column, every metric by its key, scalar outcome fields,
turn and invalid counts. ``turns_df``: one row per turn, with the game's seats and config.
``ids`` limits either to those games (the study file's current design).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ..store.store import Store


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def games_df(store: Store, study: str | None = None, status: str | None = "done", ids: set[str] | None = None) -> pd.DataFrame:
    rows = []
    for g in store.games(study):
        if (status is not None and g["status"] != status) or (ids is not None and g["id"] not in ids):
            continue
        row: dict[str, Any] = {
            "game_id": g["id"],
            "study": g["study"],
            "game": g["game"],
            "status": g["status"],
            "repeat": g["repeat"],
            "seed": g["seed"],
            "source": g["source"],
            "n_turns": g["n_turns"],
            "n_invalid": g["n_invalid"],
            "error": g["error"],
        }
        for role, model in (g["seats"] or {}).items():
            row[f"model_{role}"] = model
        for key, value in (g["config"] or {}).items():
            row[key] = value if _scalar(value) else json.dumps(value)
        for key, value in (g["outcome"] or {}).items():
            if _scalar(value) and key not in row:
                row[key] = value
        for key, value in (g["metrics"] or {}).items():
            row[key] = float("nan") if value is None else value
        rows.append(row)
    return pd.DataFrame(rows)


def turns_df(store: Store, study: str | None = None, ids: set[str] | None = None) -> pd.DataFrame:
    games = {g["id"]: g for g in store.games(study)}
    rows = []
    for t in store.turns(study):
        if ids is not None and t["game_id"] not in ids:
            continue
        g = games.get(t["game_id"], {})
        row = {k: t[k] for k in ("game_id", "idx", "role", "phase", "raw", "valid", "retries", "error", "prompt_tokens", "completion_tokens", "cost", "latency", "cached")}
        row["model"] = (g.get("seats") or {}).get(t["role"])
        row["messages"] = json.dumps(t["messages"], ensure_ascii=False)
        action = t["action"] or {}
        row["action"] = json.dumps(action, ensure_ascii=False) if action else None
        for key, value in action.items():
            if _scalar(value):
                row[f"action_{key}"] = value
        for key, value in (t["metrics"] or {}).items():
            row[key] = float("nan") if value is None else value
        for key, value in (g.get("config") or {}).items():
            if _scalar(value) and key not in row:
                row[key] = value
        for role, model in (g.get("seats") or {}).items():
            row[f"model_{role}"] = model
        rows.append(row)
    return pd.DataFrame(rows)


def uniform_columns(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with every column of mixed value types (e.g. a GLEE horizon of 12 and "inf")
    turned to text, so it can be written as Parquet; other columns are left as they are."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype != object:
            continue
        values = out[col].dropna()
        kinds = {type(v) for v in values}
        if len(kinds) > 1 and not kinds <= {int, float}:
            out[col] = out[col].map(lambda v: v if v is None or (isinstance(v, float) and v != v) else str(v))
    return out


def export(store: Store, study: str, table: str, fmt: str, out: str, ids: set[str] | None = None) -> int:
    """Write the games or turns table (of the games ``ids``, or all) as CSV or Parquet; returns
    the number of rows."""
    if table not in ("games", "turns"):
        raise ValueError(f"unknown table {table!r}: use games or turns")
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown format {fmt!r}: use csv or parquet")
    df = games_df(store, study, status=None, ids=ids) if table == "games" else turns_df(store, study, ids=ids)
    if fmt == "csv":
        df.to_csv(out, index=False)
    else:
        uniform_columns(df).to_parquet(out, index=False)
    return len(df)
