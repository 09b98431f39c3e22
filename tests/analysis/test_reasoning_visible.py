"""A reasoning model's thoughts, reasoning tokens and cut-off replies reach every place a researcher
looks: the turns export (null, not 0, where a provider reported no count), ``agora show``
(labelled, apart from the reply), the report's models tables and warnings, and the effort of a
model seated once per effort (``NAME-EFFORT``) as its own column in the report, the games export,
``agora analyze glee`` and ``agora profile``. A study without reasoning shows none of it.

The study is scripted bargaining (seconds to play); its turns are then stored again with the
reasoning a model would have given, through ``Store.save_game`` as a run stores them."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from support.helpers import agora
from support.providers import provider_server
from support.studies import model, scripted, study_toml

from agorabench.analysis.frames import export, games_df, turns_df
from agorabench.analysis.report import build_report
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.records import TurnRecord
from agorabench.store.store import Store

#: One model seated at two efforts (``a-low``, ``a-high``) and one without reasoning.
THINKING = study_toml(
    "thinking",
    "glee.bargaining",
    matchups="ordered_pairs",
    seed=3,
    fixed={"horizon": 2},
    models=[scripted("a", "spe", reasoning_effort=["low", "high"]), scripted("b", "always-accept")],
)

#: The same study without any reasoning setting.
PLAIN = study_toml("plain", "glee.bargaining", matchups="ordered_pairs", seed=3, fixed={"horizon": 2}, models=[scripted("a", "spe"), scripted("b", "always-accept")])

CUT = "cut off at the token limit (256 output tokens)"


def thoughts(model: str, idx: int) -> dict:
    """What the stored turn ``idx`` of ``model`` carries: ``a-high`` thinks aloud (a count with
    every turn), ``a-low`` reports a count without thoughts on its later turns and is cut off on
    its first, ``b`` reports nothing."""
    if model == "a-high":
        return {"reasoning": f"THOUGHT {idx}: <b>offer</b> & wait", "reasoning_tokens": 100 + idx, "finish_reason": "stop"}
    if model == "a-low":
        return {"reasoning": None, "reasoning_tokens": None, "finish_reason": "length"} if idx < 2 else {"reasoning": None, "reasoning_tokens": 40, "finish_reason": "stop"}
    return {}


def with_thoughts(store: Store, study: str) -> None:
    """Store every game of ``study`` again with :func:`thoughts` on its turns (a cut-off turn
    invalid, as the table records it)."""
    for g in store.games(study):
        records = []
        for t in store.turns(game_id=g["id"]):
            extra = thoughts(g["seats"][t["role"]], t["idx"])
            cut = extra.get("finish_reason") == "length"
            records.append(
                TurnRecord(
                    index=t["idx"], role=t["role"], phase=t["phase"], messages=t["messages"], raw=t["raw"], action=None if cut else t["action"],
                    valid=False if cut else t["valid"], retries=t["retries"], error=CUT if cut else t["error"], prompt_tokens=t["prompt_tokens"],
                    completion_tokens=t["completion_tokens"], cost=t["cost"], latency=t["latency"], cached=t["cached"], metrics=t["metrics"] or {}, **extra,
                )
            )
        fields = {k: g[k] for k in ("id", "study", "game", "config", "seats", "repeat", "seed", "prompt_version", "status", "outcome", "metrics", "error", "started", "finished")}
        store.save_game(**fields, turn_records=records)


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """(folder, study file, database) of the reasoning study, its turns stored with thoughts."""
    tmp = tmp_path_factory.mktemp("thinking")
    path = tmp / "thinking.toml"
    path.write_text(THINKING, encoding="utf-8")
    db = tmp / "t.db"
    stats, _ = run_study(load_study(path), db, progress=False)
    assert stats.done == 6 and stats.errors == 0
    store = Store(str(db))
    try:
        with_thoughts(store, "thinking")
    finally:
        store.dispose()
    return tmp, path, db


def test_the_turns_frame_and_export_carry_thoughts_tokens_and_endings(played, tmp_path):
    _, _, db = played
    store = Store(str(db), read_only=True)
    try:
        full = turns_df(store, "thinking")
        lean = turns_df(store, "thinking", transcripts=False)
        n = export(store, "thinking", "turns", "csv", str(tmp_path / "turns.csv"))
        export(store, "thinking", "turns", "parquet", str(tmp_path / "turns.parquet"))
    finally:
        store.dispose()
    for df in (full, lean):
        assert str(df["reasoning_tokens"].dtype) == "Int64"  # nullable integers: no float, no 0 for "not reported"
        for _, t in df.iterrows():
            want = thoughts(t["model"], t["idx"])
            tokens = want.get("reasoning_tokens")
            assert (pd.isna(t["reasoning_tokens"]) if tokens is None else t["reasoning_tokens"] == tokens), (t["model"], t["idx"])
            ending = want.get("finish_reason")  # b: no reasoning row, so no ending told
            assert pd.isna(t["finish_reason"]) if ending is None else t["finish_reason"] == ending, (t["model"], t["idx"])
    assert "reasoning" in full and "reasoning" not in lean  # the thoughts are a transcript column
    high = full[full["model"] == "a-high"]
    assert all(r == f"THOUGHT {i}: <b>offer</b> & wait" for r, i in zip(high["reasoning"], high["idx"]))
    assert full.loc[full["model"] != "a-high", "reasoning"].isna().all()
    assert not any("THOUGHT" in str(raw) for raw in full["raw"]) and not any("THOUGHT" in str(m) for m in full["messages"])
    csv = pd.read_csv(tmp_path / "turns.csv")
    assert len(csv) == n and {"reasoning", "reasoning_tokens", "finish_reason"} <= set(csv.columns)
    b = csv[csv["model"] == "b"]
    assert b["reasoning_tokens"].isna().all() and b["finish_reason"].isna().all()  # not reported: empty, not 0
    assert (csv.loc[csv["model"] == "a-high", "reasoning_tokens"] >= 100).all()
    parquet = pd.read_parquet(tmp_path / "turns.parquet")
    assert str(parquet["reasoning_tokens"].dtype) == "Int64" and parquet.loc[parquet["model"] == "b", "reasoning_tokens"].isna().all()


def test_the_games_export_names_each_seats_effort(played, tmp_path):
    _, _, db = played
    store = Store(str(db), read_only=True)
    try:
        games = games_df(store, "thinking")
        export(store, "thinking", "games", "csv", str(tmp_path / "games.csv"))
    finally:
        store.dispose()
    columns = list(games.columns)
    assert columns.index("effort_alice") == columns.index("model_alice") + 1 and "effort_bob" in columns
    for _, g in games.iterrows():
        for role in ("alice", "bob"):
            model, effort = g[f"model_{role}"], g[f"effort_{role}"]
            assert effort == (model.split("-")[1] if model.startswith("a-") else None) or (model == "b" and pd.isna(effort))
    assert {"effort_alice", "effort_bob"} <= set(pd.read_csv(tmp_path / "games.csv").columns)


def test_show_labels_the_thoughts_apart_from_the_reply(played, capsys):
    _, path, db = played
    store = Store(str(db), read_only=True)
    try:
        game = next(g for g in store.games("thinking") if "a-high" in g["seats"].values() and "b" in g["seats"].values())
        cut = next(g for g in store.games("thinking") if "a-low" in g["seats"].values())
    finally:
        store.dispose()
    rc, out, _ = agora(capsys, "show", str(path), game["id"][:12], "--db", str(db))
    assert rc == 0
    blocks = re.split(r"\n(?=  \[)", out)
    thought = [b for b in blocks if "THOUGHT" in b]
    assert thought and all(b.startswith("  [model's reasoning, not shown to any player · ") for b in thought)
    assert "100 reasoning tokens" in out or "101 reasoning tokens" in out
    replies = [b for b in blocks if b.startswith(("  [reply]", "  [user]", "  [system]", "  [assistant]"))]
    assert replies and not any("THOUGHT" in b for b in replies)  # never inside a prompt or a reply
    rc, out, _ = agora(capsys, "show", str(path), cut["id"][:12], "--db", str(db))
    assert rc == 0 and "finish: length (cut off at the output token limit)" in out
    assert "parse error: cut off at the token limit" in out


def test_the_report_shows_tokens_cut_offs_efforts_and_warns(played):
    tmp, _, db = played
    store = Store(str(db), read_only=True)
    try:
        page = build_report(store, "thinking", tmp / "report").read_text(encoding="utf-8")
    finally:
        store.dispose()
    warnings = page[page.index("id='warnings'") : page.index("</div>", page.index("id='warnings'"))]
    assert "a-low" in warnings and "cut off at the output token limit" in warnings and "a-high:" not in warnings
    per_model = pd.read_csv(tmp / "report" / "turns-per-model.csv", keep_default_na=False).set_index("model")
    assert list(per_model.columns[:1]) == ["effort"] and per_model.loc["a-low", "effort"] == "low" and per_model.loc["b", "effort"] == ""
    assert per_model.loc["b", "reasoning_tokens"] == "not reported" and per_model.loc["b", "reasoning_tokens_per_turn"] == "not reported"
    assert int(per_model.loc["a-low", "cut_off_turns"]) > 0 and 0 < float(per_model.loc["a-low", "cut_off_share"]) <= 1
    assert int(per_model.loc["a-high", "cut_off_turns"]) == 0 and int(per_model.loc["a-high", "reasoning_tokens"]) >= 100
    assert float(per_model.loc["a-high", "reasoning_tokens_per_turn"]) >= 100
    models = pd.read_csv(tmp / "report" / "study-models.csv", keep_default_na=False).set_index("name")
    assert models.loc["a-low", "reasoning effort"] == "low" and models.loc["a-high", "reasoning effort"] == "high" and models.loc["b", "reasoning effort"] == ""
    assert "thinking" not in models.columns and "reasoning budget" not in models.columns  # only the settings some model sets
    assert "<th>effort</th>" in page and "<th>reasoning_tokens</th>" in page and "<th>cut_off_turns</th>" in page
    assert "THOUGHT" not in page  # the report counts thoughts; it does not print them


def test_analyze_and_profile_give_the_effort_its_own_column(played, capsys):
    tmp, path, db = played
    rc, out, _ = agora(capsys, "analyze", "glee", str(path), "--db", str(db), "--out", str(tmp / "analysis"))
    assert rc == 0 and "== reasoning effort per model ==" in out
    table6_text = out.split("Table 6")[1].split("==")[1]  # the printed table names the effort too
    assert "effort" in table6_text and "a-low" in table6_text and " low" in table6_text
    table6 = pd.read_csv(tmp / "analysis" / "bargaining_table6.csv", keep_default_na=False)
    assert list(table6.columns[:2]) == ["model", "effort"]
    assert dict(zip(table6["model"], table6["effort"])) == {"a-low": "low", "a-high": "high", "b": ""}
    rc, out, _ = agora(capsys, "profile", str(db), "--out", str(tmp / "profile"))
    assert rc == 0
    rows = pd.read_csv(tmp / "profile" / "profile.csv", keep_default_na=False)
    played_rows = rows[rows["kind"] == "model"]
    assert set(zip(played_rows["model"], played_rows["effort"])) == {("a-low", "low"), ("a-high", "high"), ("b", "")}
    assert (rows.loc[rows["kind"] == "theory", "effort"] == "").all()
    assert "<th>effort</th>" in (tmp / "profile" / "profile.html").read_text(encoding="utf-8")


def test_a_study_without_reasoning_shows_none_of_it(tmp_path, write_study, capsys):
    path = write_study(PLAIN)
    db = tmp_path / "p.db"
    stats, _ = run_study(load_study(path), db, progress=False)
    assert stats.done == 2
    store = Store(str(db), read_only=True)
    try:
        page = build_report(store, "plain", tmp_path / "report").read_text(encoding="utf-8")
        games = games_df(store, "plain")
        turns = turns_df(store, "plain")
    finally:
        store.dispose()
    page = re.sub(r"<p class='note' id='provenance'>.*?</p>", "", page)  # (it names the test's folder)
    assert not re.search(r"reasoning|effort|cut.off|thought", page, re.IGNORECASE)
    assert not any(c.startswith("effort") for c in games.columns)
    assert turns["reasoning"].isna().all() and turns["reasoning_tokens"].isna().all() and turns["finish_reason"].isna().all()
    header = pd.read_csv(tmp_path / "report" / "turns-per-model.csv").columns
    assert list(header) == ["model", "turns", "invalid_rate", "retries", "prompt_tokens", "completion_tokens", "cost", "mean_latency"]
    rc, out, _ = agora(capsys, "show", str(path), "--db", str(db))
    assert rc == 0 and "reasoning" not in out and "finish:" not in out
    rc, out, _ = agora(capsys, "profile", str(db), "--out", str(tmp_path / "profile"))
    assert rc == 0 and "<th>effort</th>" not in (tmp_path / "profile" / "profile.html").read_text(encoding="utf-8")


def test_a_study_against_loopback_providers_reaches_the_export_and_the_report(tmp_path, monkeypatch, capsys):
    """The whole way: OpenAI's o3 at two efforts (counts, no thoughts) and a vLLM model whose
    thoughts come back without a count, its output limit so small that some replies are cut."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with provider_server("openai") as openai, provider_server("vllm", reasoning_tokens=100) as vllm:
        text = study_toml(
            "loop", "glee.bargaining", matchups="ordered_pairs", seed=1, fixed={"horizon": 2},
            models=[model("o3", f"openai/o3@{openai}", reasoning_effort=["low", "high"]), model("q", f"vllm/Qwen/Qwen3-8B@{vllm}", thinking="on", max_tokens=2, reasoning_budget=100)],
        )
        path = tmp_path / "loop.toml"
        path.write_text(text, encoding="utf-8")
        stats, _ = run_study(load_study(path), tmp_path / "loop.db", progress=False)
    assert stats.done == 6 and stats.errors == 0
    store = Store(str(tmp_path / "loop.db"), read_only=True)
    try:
        turns = turns_df(store, "loop")
        page = build_report(store, "loop", tmp_path / "report").read_text(encoding="utf-8")
    finally:
        store.dispose()
    o3, q = turns[turns["model"].str.startswith("o3")], turns[turns["model"] == "q"]
    assert (o3["reasoning_tokens"] > 0).all() and o3["reasoning"].isna().all()  # counted, never shown (OpenAI chat completions)
    assert q["reasoning_tokens"].isna().all() and q["reasoning"].notna().all()  # shown, never counted
    assert (q["finish_reason"] == "length").any() and not any("Let me think" in str(r) for r in turns["raw"])
    per_model = pd.read_csv(tmp_path / "report" / "turns-per-model.csv", keep_default_na=False).set_index("model")
    assert per_model.loc["q", "reasoning_tokens"] == "not reported" and int(per_model.loc["q", "cut_off_turns"]) > 0
    assert int(per_model.loc["o3-high", "reasoning_tokens"]) > int(per_model.loc["o3-low", "reasoning_tokens"]) > 0
    assert [per_model.loc[m, "effort"] for m in ("o3-low", "o3-high", "q")] == ["low", "high", ""]
    assert "q: " in page[page.index("id='warnings'") :].split("</div>")[0]
    rc, out, _ = agora(capsys, "show", str(path), "--db", str(tmp_path / "loop.db"), "--first-invalid", "--model", "q")
    assert rc == 0 and "[model's reasoning, not shown to any player · reasoning tokens not reported]" in out and "finish: length" in out
