"""Choice dynamics over the turns of a repeated decision (the envy point-allocation game):
which option a model holds at each turn, how often it switches between turns, and what it
said when it did.

A *switch* between turns s and s+1 of one game is a change of the chosen option; it is only
counted when both turns have a valid choice. Rates come with Wilson intervals
(:func:`..stats.proportion_ci`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .stats import proportion_ci


def choice_paths(choices: pd.DataFrame, context: Sequence[str] = ("model", "peer", "matrix", "peer_status", "margin", "peer_move")) -> pd.DataFrame:
    """One row per game: the ``context`` columns, ``choice_1`` … ``choice_3`` (NaN for an
    invalid turn), and ``switch_12`` / ``switch_23`` (1 switched, 0 stayed, NaN unknown)."""
    if choices.empty:
        return pd.DataFrame(columns=["game_id", *context, "choice_1", "choice_2", "choice_3", "switch_12", "switch_23"])
    wide = choices.pivot_table(index="game_id", columns="turn", values="choice", aggfunc="first")
    wide.columns = [f"choice_{int(c)}" for c in wide.columns]
    for k in (1, 2, 3):
        if f"choice_{k}" not in wide:
            wide[f"choice_{k}"] = None
    ctx = choices.drop_duplicates("game_id").set_index("game_id")[[c for c in context if c in choices]]
    out = ctx.join(wide)
    for a, b in ((1, 2), (2, 3)):
        x, y = out[f"choice_{a}"], out[f"choice_{b}"]
        known = x.notna() & y.notna()
        out[f"switch_{a}{b}"] = (x != y).astype(float).where(known)
    return out.reset_index()


def switch_rates(paths: pd.DataFrame, by: Sequence[str] = ("model",), level: float = 0.95) -> pd.DataFrame:
    """Per group: for each step (turn 1→2, 2→3) the games with both choices known, the switches,
    the switching rate and its Wilson interval."""
    rows = []
    for key, sub in paths.groupby(list(by), dropna=False):
        keys = key if isinstance(key, tuple) else (key,)
        for step, col in (("1→2", "switch_12"), ("2→3", "switch_23")):
            known = sub[col].dropna()
            rate, lo, hi = proportion_ci(int(known.sum()), len(known), level)
            rows.append({**dict(zip(by, keys)), "step": step, "games": len(known), "switches": int(known.sum()), "rate": rate, "low": lo, "high": hi})
    return pd.DataFrame(rows)


def switch_excerpts(choices: pd.DataFrame, paths: pd.DataFrame, limit: int = 12, chars: int = 240) -> pd.DataFrame:
    """Up to ``limit`` switches with what the model said at the turn it switched: model, peer,
    matrix, status cue, peer move, step, from → to, and the first ``chars`` characters of its
    ``reasoning`` column."""
    said = choices.assign(reason=choices["reasoning"] if "reasoning" in choices else "")
    said = said.drop_duplicates(["game_id", "turn"]).set_index(["game_id", "turn"])["reason"]
    parts = []
    for order, (a, b) in enumerate(((1, 2), (2, 3))):
        col = f"switch_{a}{b}"
        if col not in paths:
            continue
        sel = paths[paths[col] == 1]
        text = said.reindex(pd.MultiIndex.from_arrays([sel["game_id"], [b] * len(sel)])).to_numpy() if len(sel) else []
        text = pd.Series(text, index=sel.index, dtype=object).map(lambda t: t if isinstance(t, str) else "")
        parts.append(pd.DataFrame({
            "_pos": np.arange(len(paths))[paths[col].to_numpy() == 1], "_step": order,
            "model": sel.get("model"), "peer": sel.get("peer"), "matrix": sel.get("matrix"),
            "cue": sel.get("peer_status").astype(str) + "/" + sel.get("margin").astype(str) if "peer_status" in sel and "margin" in sel else None,
            "peer_move": sel.get("peer_move"),
            "step": f"{a}→{b}", "change": sel[f"choice_{a}"].astype(str) + " → " + sel[f"choice_{b}"].astype(str),
            "reasoning": text.map(lambda t: t[:chars] + ("…" if len(t) > chars else "")),
        }))
    out = pd.concat(parts) if parts else pd.DataFrame()
    if out.empty:
        return pd.DataFrame()
    # in path order (a game's 1→2 before its 2→3), then spread over models before taking ``limit``
    out = out.sort_values(["_pos", "_step"], kind="stable")
    out["_rank"] = out.groupby("model", dropna=False).cumcount()
    return out.sort_values(["_rank", "model"], kind="stable").head(limit).drop(columns=["_rank", "_pos", "_step"]).reset_index(drop=True)
