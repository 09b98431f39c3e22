"""Choice dynamics over the turns of a repeated decision (the envy point-allocation game):
which option a model holds at each turn, how often it switches between turns, and what it
said when it did.

A *switch* between turns s and s+1 of one game is a change of the chosen option; it is only
counted when both turns have a valid choice. Rates come with Wilson intervals
(:func:`..stats.proportion_ci`).
"""

from __future__ import annotations

from typing import Sequence

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
    rows = []
    said = choices.assign(reason=choices["reasoning"] if "reasoning" in choices else "")
    said = said.drop_duplicates(["game_id", "turn"]).set_index(["game_id", "turn"])["reason"]
    for _, p in paths.iterrows():
        for a, b in ((1, 2), (2, 3)):
            if p.get(f"switch_{a}{b}") == 1:
                text = said.get((p["game_id"], b), "")
                text = "" if not isinstance(text, str) else text
                rows.append({
                    "model": p.get("model"), "peer": p.get("peer"), "matrix": p.get("matrix"),
                    "cue": f"{p.get('peer_status')}/{p.get('margin')}", "peer_move": p.get("peer_move"),
                    "step": f"{a}→{b}", "change": f"{p[f'choice_{a}']} → {p[f'choice_{b}']}",
                    "reasoning": text[:chars] + ("…" if len(text) > chars else ""),
                })
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    # spread the excerpts over models before taking the first ``limit``
    out["_rank"] = out.groupby("model").cumcount()
    return out.sort_values(["_rank", "model"]).head(limit).drop(columns="_rank").reset_index(drop=True)
