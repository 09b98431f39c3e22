"""Dataframes of a study for notebooks, reports and export.

``games_df``: one row per game — id, study, game, status, repeat, ``model_<role>`` for each
seat (and ``effort_<role>``, the seat's reasoning effort, when a seated model was run with one),
every config parameter as its own column, every metric by its key, scalar outcome fields, turn
and invalid counts; for one study, ``attrs["spec"]`` holds its stored study file (what the
analyses read their settings from, e.g. the reference model) and ``attrs["valid_turns"]`` each
model's (turns, valid turns) (the reference rule passes over a model with none valid). pandas
drops these attributes in a ``merge`` and a CSV round trip; the analyses then ask for the study
file instead of guessing, and :func:`with_study` puts them back. ``turns_df``: one row per turn,
with the model's thoughts (``reasoning``), its reasoning tokens (``reasoning_tokens``, null
where the provider reported none) and how its reply ended (``finish_reason``), and the game's
seats and config. ``ids`` limits either to those games (the study file's current design).

People are one group. A person's seat is stored as ``human:<pseudonym>`` (one name per
participant of a served study); for analysis every such seat is the one model ``human``
(:func:`analysis_model`, the only place that decides it), so 200 participants make one row of a
table, one level of a regression, not 200. The frames pool by default (``people="pooled"``) and
keep who the person was beside the pooled name: ``participant_<role>`` after ``model_<role>``
(games) and ``participant`` after ``model`` (turns) hold the seat's ``human:<pseudonym>`` (None
for a model's seat); the intervals of the ``human`` rows are clustered by it
(:func:`~agorabench.analysis.stats.row_clusters`). ``people="each"`` keeps the stored seat names (the export, which
joins the participants table on them).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from ..core.seats import PERSON, SeatKind, participant, seat_kind
from ..store.store import Store
from .files import FORMULA_STARTS, spreadsheet_safe, write_csv, write_with  # noqa: F401 - the export's rule, kept importable from here
from .reasoning import efforts


#: The pooled name of every person's seat in analyses.
HUMAN = PERSON
#: ``people=`` of the frames: every person as the one model ``human``, or each seat as stored.
PEOPLE = ("pooled", "each")


def analysis_model(name: Any) -> Any:
    """The model a seat counts as in analyses: ``human`` for a person's seat (``human`` or
    ``human:<pseudonym>``: :func:`agorabench.core.seats.seat_kind`), the seat's own name for any
    other (None / NaN as they are)."""
    if isinstance(name, str) and seat_kind(name) is SeatKind.PERSON:
        return HUMAN
    return name


def is_person(name: Any) -> bool:
    """Whether a stored seat name is one participant's (``human:<pseudonym>``)."""
    return participant(name) is not None


def _check_people(people: str) -> None:
    if people not in PEOPLE:
        raise ValueError(f"unknown people={people!r}: use 'pooled' (every person as the model human) or 'each' (the stored seat names)")


def pool_people(df: pd.DataFrame, copy: bool = True) -> pd.DataFrame:
    """``df`` (games or turns frame) with every person's seat pooled as ``human``
    (:func:`analysis_model`) and the stored name kept beside it: ``participant_<role>`` after each
    ``model_<role>`` and ``participant`` after ``model``, added only when some seat is a person's
    (``human:<pseudonym>``). A frame already pooled is returned as it is; ``copy=False`` changes
    ``df`` itself (the frames' own, freshly built). Each column's distinct names are looked at
    once, so a frame of millions of turns costs a hash lookup per row."""
    seats = [c for c in df.columns if isinstance(c, str) and (c == "model" or c.startswith("model_"))]
    people: dict[str, list[Any]] = {}
    for column in seats:
        if "participant" + column[len("model") :] in df.columns:
            continue
        found = [v for v in pd.unique(df[column].to_numpy()) if is_person(v)]
        if found:
            people[column] = found
    if not people:
        return df
    out = df.copy() if copy else df
    for column in seats:
        person = "participant" + column[len("model") :]
        if person in out.columns:
            continue
        stored = out[column]
        mine = stored.isin(people.get(column, []))
        kept = stored.where(mine, None).astype(object)
        if mine.any():
            out[column] = stored.where(~mine, HUMAN)
        out.insert(out.columns.get_loc(column) + 1, person, kept)
    return out


def people_summary(games: pd.DataFrame) -> dict[str, int]:
    """How many people and games the pooled ``human`` rows of a games frame hold:
    ``{"people": participants, "games": games with a person in a seat}`` (zeros for none)."""
    people = [c for c in games.columns if isinstance(c, str) and c.startswith("participant_")]
    if not people or games.empty:
        return {"people": 0, "games": 0}
    who = {n for c in people for n in pd.unique(games[c].to_numpy()) if is_person(n)}
    played = int(games[people].notna().any(axis=1).sum())  # the columns hold people's names only
    return {"people": len(who), "games": played}


def people_line(games: pd.DataFrame, of: str = "") -> str:
    """``human: 12 people, 24 games`` for a games frame whose ``human`` pools participants; ""
    when no participant played. ``of`` names the games counted (`` of Bargaining``: one family's,
    whose count may be below the study's). A frame with unfinished games (a ``status`` column)
    also says how many people the finished games hold, which are the ones the analyses use, so
    two counts in one report never differ without a reason."""
    n = people_summary(games)
    if not n["people"]:
        return ""
    line = f"{HUMAN}: {_people(n['people'])}, {n['games']} {'game' if n['games'] == 1 else 'games'}{of}"
    if "status" in games and (games["status"] != "done").any():
        done = people_summary(games[games["status"] == "done"])
        if done != n:
            line += f" ({_people(done['people'])} in the {done['games']} finished {'game' if done['games'] == 1 else 'games'} the analyses use)"
    return line


def _people(n: int) -> str:
    return f"{n} {'person' if n == 1 else 'people'}"


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


GAME_FIELDS = ("id", "study", "game", "status", "repeat", "seed", "source", "n_turns", "n_invalid", "error")


def study_spec(store: Store, study: str) -> dict:
    """:meth:`Store.study_spec <agorabench.store.store.Store.study_spec>` (the stored study
    file, with the models of every run), kept importable from here."""
    return store.study_spec(study)


def games_df(store: Store, study: str | None = None, status: str | None = "done", ids: set[str] | None = None, games: dict[str, list[Any]] | None = None, people: str = "pooled") -> pd.DataFrame:
    """One row per game (see the module docstring); ``games``: the study's games as
    ``store.game_columns`` reads them, when the caller already has them (a report reads them
    once for games and turns); ``ids``: only these games (a study file's current design). With
    a ``study``, ``attrs["spec"]`` is its stored study file (:func:`study_spec`). ``people``:
    ``"pooled"`` (every person's seat as ``human``, with ``participant_<role>``) or ``"each"``
    (the stored seat names)."""
    _check_people(people)
    columns = games if games is not None else store.game_columns(study)
    if study is not None and not columns["id"]:  # a mistyped name fails here, not later
        held = sorted({g["study"] for g in store.games()})
        raise ValueError(f"no games of study {study!r} in {store.db}" + (f" (it holds: {', '.join(held)})" if held else " (it holds no games)"))
    df = _games_df(store, study, status, ids, columns)
    if people == "pooled":
        df = pool_people(df, copy=False)
    if study is not None and len(df):
        spec = study_spec(store, study)
        df = _with_seat_efforts(df, efforts(spec))
        df.attrs["spec"] = spec
        df.attrs["valid_turns"] = valid_turns(store, study, set(df["game_id"]), dict(zip(columns["id"], columns["seats"])), people=people)
    return df


def with_study(df: pd.DataFrame, store: Store, study: str) -> pd.DataFrame:
    """``df`` (a copy) with the attributes :func:`games_df` gives a study's games frame —
    ``attrs["spec"]``, the stored study file, and ``attrs["valid_turns"]`` — put back, e.g. after
    pandas' ``merge`` or a CSV round trip dropped them; the analyses read them (the GLEE
    reference rule)."""
    out = df.copy()
    out.attrs["spec"] = study_spec(store, study)
    pooled = any(isinstance(c, str) and c.startswith("participant_") for c in out.columns)
    out.attrs["valid_turns"] = valid_turns(store, study, set(out["game_id"]) if "game_id" in out else None, people="pooled" if pooled else "each")
    return out


def valid_turns(store: Store, study: str, ids: set[str] | None = None, seats: dict[str, dict[str, str]] | None = None, people: str = "each") -> dict[str, tuple[int, int]]:
    """Model name -> (turns, valid turns) over the study's games (``ids``: only these), counted
    by the database (one grouped query, no turn read); ``seats``: game id -> role -> model when
    the caller has them; ``people="pooled"`` counts every person's seat under ``human``. What
    the analyses read to pass over a model none of whose answers was valid
    (``games.attrs["valid_turns"]``)."""
    import sqlalchemy as sa

    from ..store.schema import games as games_table, turns as turns_table

    q = (
        sa.select(turns_table.c.game_id, turns_table.c.role, sa.func.count(), sa.func.sum(sa.case((turns_table.c.valid, 1), else_=0)))
        .join(games_table, games_table.c.id == turns_table.c.game_id)
        .where(games_table.c.study == study)
        .group_by(turns_table.c.game_id, turns_table.c.role)
    )
    with store.engine.connect() as conn:
        rows = conn.execute(q).all()
    if seats is None:
        seats = {g["id"]: g["seats"] or {} for g in store.games(study)}
    out: dict[str, list[int]] = {}
    for game_id, role, n, valid in rows:
        if ids is not None and game_id not in ids:
            continue
        model = (seats.get(game_id) or {}).get(role)
        if model is None:
            continue
        if people == "pooled":
            model = analysis_model(model)
        total = out.setdefault(str(model), [0, 0])
        total[0] += int(n or 0)
        total[1] += int(valid or 0)
    return {m: (n, v) for m, (n, v) in out.items()}


def _with_seat_efforts(df: pd.DataFrame, found: dict[str, str]) -> pd.DataFrame:
    """``effort_<role>`` after each ``model_<role>`` column: the reasoning effort its seat's
    model was run with (None for one without); no column at all when no seated model has one."""
    seats = [c for c in df.columns if isinstance(c, str) and c.startswith("model_")]
    if not found or not any(df[c].isin(list(found)).any() for c in seats):
        return df
    for column in seats:
        name = "effort_" + column[len("model_") :]
        if name not in df.columns:
            df.insert(df.columns.get_loc(column) + 1, name, df[column].map(found))
    return df


def _games_df(store: Store, study: str | None, status: str | None, ids: set[str] | None, games: dict[str, list[Any]] | None) -> pd.DataFrame:
    columns = games if games is not None else store.game_columns(study)
    keep = [(status is None or s == status) and (ids is None or g in ids) for g, s in zip(columns["id"], columns["status"])]
    cols = {k: [v for v, kept in zip(values, keep) if kept] for k, values in columns.items()} if not all(keep) else columns
    if not cols["id"]:  # none kept (e.g. no game done yet): the frame still has its columns
        return pd.DataFrame(columns=[("game_id" if k == "id" else k) for k in GAME_FIELDS])
    df = pd.DataFrame({("game_id" if k == "id" else k): cols[k] for k in GAME_FIELDS})
    parts = [df, pd.DataFrame.from_records([s or {} for s in cols["seats"]], index=df.index).add_prefix("model_")]
    config = pd.DataFrame.from_records([c or {} for c in cols["config"]], index=df.index)
    for col in config.columns:  # lists and tables as JSON text
        if config[col].dtype == object and not config[col].map(_scalar).all():
            config[col] = config[col].map(lambda v: v if _scalar(v) else json.dumps(v))
    parts.append(config)
    taken = set(df.columns) | set(parts[1].columns) | set(config.columns)
    outcome = _scalar_columns([o or {} for o in cols["outcome"]], df.index, "")
    parts.append(outcome[[c for c in outcome.columns if c not in taken]])
    metrics = pd.DataFrame.from_records([m or {} for m in cols["metrics"]], index=df.index)
    if len(metrics.columns):
        parts = [p.drop(columns=[c for c in metrics.columns if c in p.columns]) for p in parts]
        parts.append(metrics.fillna(float("nan")) if metrics.isna().any().any() else metrics)
    return pd.concat(parts, axis=1)


TURN_FIELDS = ("game_id", "idx", "role", "phase", "raw", "valid", "retries", "error", "prompt_tokens", "completion_tokens", "cost", "latency", "cached")

#: A turn's reasoning, after :data:`TURN_FIELDS`: the model's thoughts (None: it gave none), its
#: reasoning tokens (nullable integers: null where the provider reported none, never 0 for that)
#: and why its reply ended (``stop``, ``length`` = cut off at the output token limit, ...; null
#: for a plain stop the store keeps no row for, and for players that are not models).
REASONING_FIELDS = ("reasoning", "reasoning_tokens", "finish_reason")

#: A turn's use of the provider's prompt cache and how it was billed, after
#: :data:`REASONING_FIELDS`: prompt tokens read from the cache (``cached_tokens``, of
#: ``prompt_tokens``) and written to it (``cache_write_tokens``), the tier its calls were billed
#: at (``tier``: ``batch``, ``flex``, ``priority``, ``off_peak``, ``mixed``; null for the
#: standard tier and for turns no call was billed for) and its calls made again at the standard
#: tier (``fallbacks``); zeros and null in databases written before they were kept.
USAGE_FIELDS = ("cached_tokens", "cache_write_tokens", "tier", "fallbacks")


def turns_df(store: Store, study: str | None = None, ids: set[str] | None = None, transcripts: bool = True, games: dict[str, list[Any]] | None = None, people: str = "pooled") -> pd.DataFrame:
    """One row per turn: its fields, the model in its seat (``model``), the action as JSON and
    each scalar action field as ``action_<key>``, its metrics, then the game's scalar config
    parameters and seats (``model_<role>``); the turn's :data:`REASONING_FIELDS` follow its own
    fields. ``transcripts=False`` leaves out the prompt transcript (``messages``), the raw answer
    (``raw``), the thoughts (``reasoning``) and the action as JSON (its fields stay as
    ``action_<key>``), by far the largest columns; reports use that. ``games``: the study's
    games as ``store.game_columns`` reads them, when the caller already has them; ``ids``: only
    these games; ``people``: as in :func:`games_df` (pooled: ``model`` and ``model_<role>`` say
    ``human`` for a person, ``participant`` / ``participant_<role>`` who)."""
    _check_people(people)
    stored = games if games is not None else store.game_columns(study)
    seats = {gid: s or {} for gid, s in zip(stored["id"], stored["seats"])}
    configs = {gid: c or {} for gid, c in zip(stored["id"], stored["config"])}
    del stored
    fields = TURN_FIELDS if transcripts else tuple(f for f in TURN_FIELDS if f != "raw")
    if transcripts:
        rows = store.turns(study, messages=True)  # each row carries its reasoning already
        cols = {k: [t.get(k) for t in rows] for k in (*fields, *REASONING_FIELDS, *USAGE_FIELDS, "action", "metrics", "messages")}
        del rows
    else:
        cols = store.turn_columns(study)  # columns straight from the store: no dict per turn
        cols.update(_reasoning_columns(store.reasoning_columns(study), cols["game_id"], cols["idx"]))
        cols.update(_usage_columns(store.usage_columns(study), cols["game_id"], cols["idx"]))
    if ids is not None:
        keep = [g in ids for g in cols["game_id"]]
        if not all(keep):  # (the usual case keeps every turn: no copy)
            cols = {k: [v for v, kept in zip(values, keep) if kept] for k, values in cols.items()}
    if not cols["game_id"]:
        return pd.DataFrame()
    df = pd.DataFrame({k: cols[k] for k in fields})
    for k in REASONING_FIELDS if transcripts else REASONING_FIELDS[1:]:
        df[k] = pd.array(cols[k], dtype="Int64") if k == "reasoning_tokens" else cols[k]
    for k in USAGE_FIELDS:
        df[k] = cols[k] if k == "tier" else np.asarray(cols[k], dtype=np.int64)
    df["model"] = [seats.get(g, {}).get(r) for g, r in zip(cols["game_id"], cols["role"])]
    actions = [a or {} for a in cols["action"]]
    if transcripts:
        df["messages"] = [json.dumps(m, ensure_ascii=False) for m in cols["messages"]]
        df["action"] = [json.dumps(a, ensure_ascii=False) if a else None for a in actions]
    # scalar action fields as action_<key>, then metrics (None -> NaN); built column-wise in C
    parts = [df, _scalar_columns(actions, df.index, "action_")]
    metrics = pd.DataFrame.from_records([m or {} for m in cols["metrics"]], index=df.index)
    del cols, actions
    if len(metrics.columns):
        parts[0] = df.drop(columns=[c for c in metrics.columns if c in df.columns])
        parts[1] = parts[1].drop(columns=[c for c in metrics.columns if c in parts[1].columns])
        parts.append(metrics.fillna(float("nan")) if metrics.isna().any().any() else metrics)
    df = pd.concat(parts, axis=1)
    # game-level columns once per game, joined (config keys a turn column already has are left out)
    per_game = []
    for gid in df["game_id"].unique():
        row = {"game_id": gid}
        row.update({k: v for k, v in configs.get(gid, {}).items() if _scalar(v)})
        row.update({f"model_{r}": m for r, m in seats.get(gid, {}).items()})
        per_game.append(row)
    extra = pd.DataFrame(per_game).set_index("game_id")
    extra = extra[[c for c in extra.columns if c not in df.columns or c.startswith("model_")]]
    codes = extra.index.get_indexer(df["game_id"])
    for c in extra.columns:
        df[c] = extra[c].to_numpy()[codes]
    return pool_people(df, copy=False) if people == "pooled" else df


def _reasoning_columns(found: dict[tuple[str, int], tuple[str | None, int | None, str | None]], game_ids: list[str], idxs: list[int]) -> dict[str, Any]:
    """The turns' :data:`REASONING_FIELDS` as columns in the order of ``game_ids`` / ``idxs``,
    from ``Store.reasoning_columns`` (rows only for turns with reasoning data): each (game, turn)
    becomes one integer (game code × turns + index) and all turns are looked up at once, no dict
    per turn; a turn without a row gets None / NA."""
    n = len(game_ids)
    if not found or not n:
        return {"reasoning": [None] * n, "reasoning_tokens": pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool)), "finish_reason": [None] * n}
    codes, games = pd.factorize(np.asarray(game_ids, dtype=object))
    turn = np.asarray(idxs, dtype=np.int64)
    width = int(turn.max()) + 1
    keys = list(found)
    key_game = pd.Index(games).get_indexer([k[0] for k in keys])
    key_turn = np.fromiter((k[1] for k in keys), dtype=np.int64, count=len(keys))
    usable = (key_game >= 0) & (key_turn >= 0) & (key_turn < width)  # rows of turns this read left out drop
    at = pd.Index((key_game * width + key_turn)[usable]).get_indexer(codes.astype(np.int64) * width + turn)
    values = [v for v, kept in zip(found.values(), usable) if kept]
    # -1 (no row) picks the None appended last
    texts = np.array([v[0] for v in values] + [None], dtype=object)
    tokens = pd.array([v[1] for v in values] + [None], dtype="Int64")
    finish = np.array([v[2] for v in values] + [None], dtype=object)
    return {"reasoning": texts[at].tolist(), "reasoning_tokens": tokens[at], "finish_reason": finish[at].tolist()}


def _usage_columns(found: dict[tuple[str, int], tuple[int, int, str | None, int]], game_ids: list[str], idxs: list[int]) -> dict[str, Any]:
    """The turns' :data:`USAGE_FIELDS` as columns in the order of ``game_ids`` / ``idxs``, from
    ``Store.usage_columns`` (rows only for turns with something to say), looked up at once as
    :func:`_reasoning_columns` does; a turn without a row gets zeros and None."""
    n = len(game_ids)
    if not found or not n:
        return {"cached_tokens": np.zeros(n, dtype=np.int64), "cache_write_tokens": np.zeros(n, dtype=np.int64), "tier": [None] * n, "fallbacks": np.zeros(n, dtype=np.int64)}
    codes, games = pd.factorize(np.asarray(game_ids, dtype=object))
    turn = np.asarray(idxs, dtype=np.int64)
    width = int(turn.max()) + 1
    keys = list(found)
    key_game = pd.Index(games).get_indexer([k[0] for k in keys])
    key_turn = np.fromiter((k[1] for k in keys), dtype=np.int64, count=len(keys))
    usable = (key_game >= 0) & (key_turn >= 0) & (key_turn < width)
    at = pd.Index((key_game * width + key_turn)[usable]).get_indexer(codes.astype(np.int64) * width + turn)
    values = [v for v, kept in zip(found.values(), usable) if kept] + [(0, 0, None, 0)]  # -1 (no row) picks the last
    column = lambda i, dtype: np.array([v[i] for v in values], dtype=dtype)[at]  # noqa: E731
    return {"cached_tokens": column(0, np.int64), "cache_write_tokens": column(1, np.int64), "tier": column(2, object).tolist(), "fallbacks": column(3, np.int64)}


def _scalar_columns(values: list[dict[str, Any]], index: pd.Index, prefix: str) -> pd.DataFrame:
    """One column ``prefix + key`` per key that some dict holds with a scalar value (None
    included), values that are not scalars (lists, dicts) set to None."""
    keys = list(dict.fromkeys(k for d in values for k, v in d.items() if _scalar(v)))
    frame = pd.DataFrame.from_records(values, index=index, columns=keys) if keys else pd.DataFrame(index=index)
    out = {}
    for col in keys:
        column = frame[col]
        if column.dtype == object:
            scalar = column.map(_scalar)
            if not scalar.all():
                column = column.where(scalar, None)
        out[prefix + str(col)] = column
    return pd.DataFrame(out, index=index)


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


#: The tables :func:`export` writes.
TABLES = ("games", "turns", "participants", "judgements")


def export(store: Store, study: str, table: str, fmt: str, out: str, ids: set[str] | None = None, spec: dict | None = None) -> int:
    """Write the games, turns or participants table (of the games ``ids``, or all) as CSV or
    Parquet; returns the number of rows. Games and turns keep every seat's stored name (a
    person's ``human:<pseudonym>``, not the pooled ``human`` of the analyses), so they join the
    participants table (:func:`~agorabench.analysis.participants.participants_df`; ``spec``: the
    study file as a dict, default the stored one) on it. A games or turns table without rows is a
    ValueError and writes no file; a study nobody took part in has no participants table: 0 is
    returned and no file written. CSV cells are made safe for spreadsheets
    (:func:`spreadsheet_safe`); Parquet keeps the raw values. A write that fails is an
    :class:`~agorabench.analysis.files.OutputError` and leaves an earlier ``out`` as it was."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}: use {', '.join(TABLES[:-1])} or {TABLES[-1]}")
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown format {fmt!r}: use csv or parquet")
    if table == "participants":
        from .participants import participants_df

        df = participants_df(store, study, spec=spec, ids=ids)
        if df.empty:  # no file: the study was never served, or nobody entered
            return 0
    elif table == "judgements":  # agora judge's codes, one row per message, judge, taxonomy and prompt
        from .judged import judgements_df

        df = judgements_df(store, study, ids)
        if df.empty:
            raise ValueError(f"no judgements of study {study!r} to export (run agora judge first); nothing written")
    else:
        df = games_df(store, study, status=None, ids=ids, people="each") if table == "games" else turns_df(store, study, ids=ids, people="each")
    if df.empty:  # nothing is written: an empty file would pass for a result
        raise ValueError(f"no {table} of study {study!r} to export" + (" (its games in scope have no stored turns)" if table == "turns" else "") + "; nothing written")
    # a temporary file renamed over ``out`` when complete: a failed write (a full disk) keeps an
    # earlier file whole and says which file and why (files.OutputError)
    if fmt == "csv":
        write_csv(df, out, index=False)  # spreadsheet_safe: every CSV this package writes
    else:
        frame = uniform_columns(df)
        write_with(out, lambda tmp: frame.to_parquet(tmp, index=False))
    return len(df)
