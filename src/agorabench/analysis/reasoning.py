"""Reasoning models in the analyses: which reasoning settings each seated model ran with (read
from the stored study file), and per model the reasoning tokens and the replies cut off at the
output token limit (read from the turns).

A study file's model entry whose ``reasoning_effort`` is a list seats the model once per effort,
named ``NAME-EFFORT``; :func:`seated_entries` applies the same rule to the stored entries, so a
seat's name finds its entry and its effort. A study whose models set no reasoning field and whose
turns carry no reasoning data gets nothing from here: :func:`efforts` is empty and
:func:`per_model` is None, so its tables keep their columns.
"""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ..core.seats import effort_seat
from .files import safe_cell, write_with

#: The study file's reasoning settings of a model entry, as a report's Models table heads them.
SETTINGS = {"reasoning": "reasoning", "reasoning_effort": "reasoning effort", "thinking": "thinking", "reasoning_budget": "reasoning budget"}

#: The finish reasons of a reply cut off at the output token limit (OpenAI-compatible servers,
#: Anthropic, the Responses API; the rule of ``models.base.Completion.cut_off``).
CUT_OFF = ("length", "max_tokens", "max_output_tokens")

#: What a model's reasoning-token cells say when its provider reported none for any turn.
NOT_REPORTED = "not reported"


def seated_entries(models: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored model entries as games seat them: an entry whose ``reasoning_effort`` is a
    list once per effort (the rule of :func:`agorabench.core.seats.effort_seat`, which
    :meth:`agorabench.core.study.ModelEntry.efforts` follows too); other entries as they are."""
    out = []
    for entry in models:
        listed = entry.get("reasoning_effort")
        if not isinstance(listed, list):
            out.append(entry)
            continue
        out += [{**entry, **effort_seat(str(entry.get("name")), entry.get("display_name"), effort)} for effort in listed]
    return out


def efforts(spec: dict[str, Any] | None) -> dict[str, str]:
    """Model name -> reasoning effort, for every seated model of the study file ``spec`` that
    was run with one; {} when none was (or there is no study file)."""
    found = {}
    for entry in seated_entries((spec or {}).get("models") or []):
        effort = entry.get("reasoning_effort")
        if isinstance(effort, str) and entry.get("name") is not None:
            found[str(entry["name"])] = effort
    return found


def settings_columns(entries: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The reasoning settings of ``entries`` as table columns (heading -> one value per entry,
    "" where an entry leaves it unset); only the settings some entry sets, so a study without
    reasoning settings gets no column."""
    columns = {}
    for key, heading in SETTINGS.items():
        values = [entry.get(key) for entry in entries]
        if any(v is not None for v in values):
            columns[heading] = ["" if v is None else _setting(v) for v in values]
    return columns


def _setting(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def has_reasoning(turns: pd.DataFrame) -> bool:
    """Whether any turn shows reasoning: thoughts, a reasoning-token count above 0, or a reply
    cut off at the output token limit. (A provider that reports 0 reasoning tokens for every
    reply of a model that does not reason shows none.)"""
    if not len(turns):
        return False
    if "reasoning" in turns and turns["reasoning"].notna().any():
        return True
    if "reasoning_tokens" in turns and (pd.to_numeric(turns["reasoning_tokens"], errors="coerce").fillna(0) > 0).any():
        return True
    return "finish_reason" in turns and turns["finish_reason"].isin(CUT_OFF).any()


def per_model(turns: pd.DataFrame, reasoning_models: bool = False) -> pd.DataFrame | None:
    """Per model (the ``model`` column): reasoning tokens (sum, and mean over the turns whose
    count was reported; both "not reported" when none was), and the turns cut off at the output
    token limit (:data:`CUT_OFF`) with their share of the model's turns. None when no turn shows
    reasoning (:func:`has_reasoning`) and ``reasoning_models`` is false (the study file gives no
    model a reasoning setting)."""
    if not len(turns) or "model" not in turns or not (reasoning_models or has_reasoning(turns)):
        return None
    tokens = turns["reasoning_tokens"] if "reasoning_tokens" in turns else pd.Series(pd.NA, index=turns.index, dtype="Int64")
    finish = turns["finish_reason"] if "finish_reason" in turns else pd.Series(None, index=turns.index, dtype=object)
    frame = pd.DataFrame({"model": turns["model"], "tokens": pd.to_numeric(tokens, errors="coerce"), "cut": finish.isin(CUT_OFF).astype(int)})
    rows = []
    for model, sub in frame.groupby("model", sort=True):
        reported = sub["tokens"].dropna()
        n, cut = len(sub), int(sub["cut"].sum())
        rows.append(
            {
                "model": model,
                "reasoning_tokens": int(reported.sum()) if len(reported) else NOT_REPORTED,
                "reasoning_tokens_per_turn": float(reported.mean()) if len(reported) else NOT_REPORTED,
                "cut_off_turns": cut,
                "cut_off_share": cut / n if n else 0.0,
            }
        )
    return pd.DataFrame(rows)


def _cut_off(turns: pd.DataFrame) -> pd.Series:
    """Which turns were cut off at the output token limit (:data:`CUT_OFF`)."""
    return turns["finish_reason"].isin(CUT_OFF)


def _valid(turns: pd.DataFrame) -> pd.Series:
    """The runner's stored decision per turn (all valid when the frame has no ``valid`` column)."""
    return turns["valid"].fillna(False).astype(bool) if "valid" in turns else pd.Series(True, index=turns.index)


def _advice(entry: dict[str, Any] | None) -> str:
    """What to change for a model whose answers were cut off: ``max_tokens`` always,
    ``reasoning_budget`` only for an entry with a reasoning setting, the effort only for an
    entry run with one."""
    entry = entry or {}
    knobs = ["<code>max_tokens</code>"]
    if any(entry.get(key) is not None for key in SETTINGS):
        knobs.append("<code>reasoning_budget</code>")
    advice = "raise " + " or ".join(knobs)
    if isinstance(entry.get("reasoning_effort"), str):
        advice += f", or lower the effort (<code>{html.escape(entry['reasoning_effort'])}</code>)"
    return advice


def cut_off_warnings(turns: pd.DataFrame, spec: dict[str, Any] | None = None) -> list[str]:
    """One line (HTML) per model with invalid turns cut off at the output token limit, most
    cut first. Only turns the runner stored as invalid count (a cut-off reply whose choice was
    complete is valid: :func:`cut_off_notes` mentions those); the advice follows the model's
    entry in the study file ``spec`` (:func:`_advice`)."""
    if not len(turns) or "finish_reason" not in turns or "model" not in turns:
        return []
    entries = {str(e.get("name")): e for e in seated_entries((spec or {}).get("models") or [])}
    mask = _cut_off(turns) & ~_valid(turns)
    cut = mask.groupby(turns["model"]).agg(["sum", "size"])
    cut = cut[cut["sum"] > 0].assign(share=lambda d: d["sum"] / d["size"]).sort_values("share", ascending=False, kind="stable")
    lines = []
    for model, r in cut.iterrows():
        reasons = ", ".join(f"<code>{html.escape(str(f))}</code>" for f in sorted(set(turns.loc[mask & (turns["model"] == model), "finish_reason"])))
        lines.append(
            f"{html.escape(str(model))}: {int(r['sum'])} of its {int(r['size'])} turns ({r['share']:.0%}) were cut off at the output token limit "
            f"(finish reason {reasons}) before their answer was complete and are invalid; {_advice(entries.get(str(model)))}."
        )
    return lines


def cut_off_notes(turns: pd.DataFrame) -> list[str]:
    """One line (HTML) per model with valid turns cut off at the output token limit: their
    choice was complete before the limit, so they count (the runner stored them as valid)."""
    if not len(turns) or "finish_reason" not in turns or "model" not in turns:
        return []
    mask = _cut_off(turns) & _valid(turns)
    counts = mask.groupby(turns["model"]).sum()
    return [
        f"{html.escape(str(model))}: {int(n)} valid turn{'s' if n != 1 else ''} {'were' if n != 1 else 'was'} cut off at the output token limit after "
        f"{'their' if n != 1 else 'its'} choice was complete (the text after the choice is shortened; the choice counts)."
        for model, n in counts[counts > 0].items()
    ]


_SEAT = re.compile(r"model_(.+)")


def with_efforts(df: pd.DataFrame, found: dict[str, str]) -> pd.DataFrame:
    """``df`` with each model's reasoning effort beside its name: ``effort`` after a ``model``
    column, ``effort_<role>`` after a ``model_<role>`` column ("" for a model run without
    one). ``df`` itself when ``found`` is empty or the table names no model, or already has
    the column."""
    if not found:
        return df
    targets = []
    for i, column in enumerate(df.columns):
        if not isinstance(column, str):
            continue
        seat = _SEAT.fullmatch(column)
        name = "effort" if column == "model" else f"effort_{seat.group(1)}" if seat else None
        if name is not None and name not in df.columns:
            targets.append((i, column, name))
    if not targets:
        return df
    out = df.copy()
    for shift, (i, column, name) in enumerate(targets):
        out.insert(i + 1 + shift, name, [found.get(str(v), "") if v is not None else "" for v in df[column]])
    return out


def add_efforts_to_csv(path: str | Path, found: dict[str, str]) -> bool:
    """Rewrite the CSV file ``path`` with :func:`with_efforts`'s columns, leaving every other
    cell's text as it was; returns whether the file changed."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or not found:
        return False
    header = rows[0]
    inserts = []
    for i, column in enumerate(header):
        seat = _SEAT.fullmatch(column)
        name = "effort" if column == "model" else f"effort_{seat.group(1)}" if seat else None
        if name is not None and name not in header:
            inserts.append((i, name))
    if not inserts:
        return False
    written = {safe_cell(str(m)): e for m, e in found.items()}  # a model's name as the CSV holds it (files.spreadsheet_safe)
    out = []
    for k, row in enumerate(rows):
        new = list(row)
        for shift, (i, name) in enumerate(inserts):
            value = name if k == 0 else safe_cell(written.get(row[i], "")) if i < len(row) else ""
            new.insert(i + 1 + shift, value)
        out.append(new)
    def write(tmp: Path) -> None:
        with tmp.open("w", newline="", encoding="utf-8") as f:
            csv.writer(f, lineterminator="\n").writerows(out)

    write_with(path, write)  # a temporary file renamed over it: a failed write keeps the file as it was
    return True
