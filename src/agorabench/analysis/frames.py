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


def games_df(store: Store, study: str | None = None, status: str | None = "done", ids: set[str] | None = None, records: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    """One row per game (see the module docstring); ``records``: the rows of ``store.games``
    when the caller already has them (a report reads them once for games and turns); ``ids``:
    only these games (a study file's current design)."""
    rows = []
    for g in records if records is not None else store.games(study):
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


TURN_FIELDS = ("game_id", "idx", "role", "phase", "raw", "valid", "retries", "error", "prompt_tokens", "completion_tokens", "cost", "latency", "cached")


def turns_df(store: Store, study: str | None = None, ids: set[str] | None = None, transcripts: bool = True, records: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    """One row per turn: its fields, the model in its seat (``model``), the action as JSON and
    each scalar action field as ``action_<key>``, its metrics, then the game's scalar config
    parameters and seats (``model_<role>``). ``transcripts=False`` leaves out the prompt
    transcript (``messages``), the raw answer (``raw``) and the action as JSON (its fields stay as
    ``action_<key>``), by far the largest columns; reports use that. ``records``: the game rows
    when the caller already has them; ``ids``: only these games."""
    games = {g["id"]: g for g in (records if records is not None else store.games(study))}
    columns: dict[str, list[Any]] = {}
    n = 0
    fields = TURN_FIELDS if transcripts else tuple(f for f in TURN_FIELDS if f != "raw")
    for t in store.turns(study, messages=transcripts):
        if ids is not None and t["game_id"] not in ids:
            continue
        row: dict[str, Any] = {k: t[k] for k in fields}
        g = games.get(t["game_id"])
        row["model"] = ((g or {}).get("seats") or {}).get(t["role"])
        action = t["action"] or {}
        if transcripts:
            row["messages"] = json.dumps(t["messages"], ensure_ascii=False)
            row["action"] = json.dumps(action, ensure_ascii=False) if action else None
        for key, value in action.items():
            if value is None or isinstance(value, (str, int, float, bool)):
                row["action_" + key] = value
        for key, value in (t["metrics"] or {}).items():
            row[key] = float("nan") if value is None else value
        # column lists instead of one dict per turn: far less memory for 10^5–10^6 turns
        for key, value in row.items():
            col = columns.get(key)
            if col is None:
                col = columns[key] = [None] * n
            col.append(value)
        n += 1
        if len(row) != len(columns):  # columns this turn did not have
            for col in columns.values():
                if len(col) < n:
                    col.append(None)
    df = pd.DataFrame(columns)
    del columns
    if df.empty:
        return df
    # game-level columns once per game, joined (config keys a turn column already has are left out)
    per_game = []
    for gid in df["game_id"].unique():
        g = games.get(gid) or {}
        row = {"game_id": gid}
        row.update({k: v for k, v in (g.get("config") or {}).items() if _scalar(v)})
        row.update({f"model_{r}": m for r, m in (g.get("seats") or {}).items()})
        per_game.append(row)
    extra = pd.DataFrame(per_game).set_index("game_id")
    extra = extra[[c for c in extra.columns if c not in df.columns or c.startswith("model_")]]
    codes = extra.index.get_indexer(df["game_id"])
    for c in extra.columns:
        df[c] = extra[c].to_numpy()[codes]
    return df


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
