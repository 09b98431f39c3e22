"""What a corpus of games holds (GLEE Table 4): games, decisions, messages and words per game
family, and how long messages are.

A *decision* is a stored turn (one answer of one player). A *message* is a turn whose action has
a non-empty free-text ``message`` field; its *words* are its whitespace-separated tokens.
"""

from __future__ import annotations

import pandas as pd


def message_words(turns: pd.DataFrame, text: str = "action_message") -> pd.Series:
    """Words per message (turns without a message text are left out), indexed like ``turns``."""
    if text not in turns:
        return pd.Series(dtype=float)
    msgs = turns[text].dropna().astype(str).str.strip()
    msgs = msgs[msgs != ""]
    return msgs.str.split().str.len().astype(float)


def corpus_stats(games: pd.DataFrame, turns: pd.DataFrame, by: str = "game") -> pd.DataFrame:
    """Per value of ``by`` (default the game) and in total: games, decisions, messages, words,
    mean and median words per message."""
    words = message_words(turns)
    t = turns.assign(words=words) if len(turns) else pd.DataFrame(columns=["game_id", "words"])
    game_of = games.set_index("game_id")[by]
    t = t[t["game_id"].isin(game_of.index)].copy()
    t[by] = t["game_id"].map(game_of)
    rows = []
    groups = list(games.groupby(by)) + [("total", games)]
    for key, sub in groups:
        tt = t if key == "total" else t[t[by] == key]
        w = tt["words"].dropna()
        rows.append({by: key, "games": len(sub), "decisions": len(tt), "messages": int(w.size), "words": int(w.sum()), "mean_words_per_message": float(w.mean()) if w.size else float("nan"), "median_words_per_message": float(w.median()) if w.size else float("nan")})
    return pd.DataFrame(rows)
