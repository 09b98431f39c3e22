"""The rules of ``analysis/reasoning.py`` and the turns frame's reasoning merge, on small values:
which seats an effort list makes, when a study shows reasoning at all, what a model's row says,
and that effort columns leave every other cell as it was."""

from __future__ import annotations

import pandas as pd

from agorabench.analysis.frames import _reasoning_columns
from agorabench.analysis.reasoning import NOT_REPORTED, add_efforts_to_csv, cut_off_warnings, efforts, has_reasoning, per_model, seated_entries, settings_columns, with_efforts


def test_an_effort_list_seats_the_model_once_per_effort():
    spec = {"models": [{"name": "o3", "display_name": "O3", "reasoning_effort": ["low", "high"]}, {"name": "opus", "thinking": "on", "reasoning_budget": 4096}, {"name": "mini", "reasoning_effort": "minimal"}]}
    seated = seated_entries(spec["models"])
    assert [m["name"] for m in seated] == ["o3-low", "o3-high", "opus", "mini"]
    assert [m["display_name"] for m in seated[:2]] == ["O3-low", "O3-high"]
    assert efforts(spec) == {"o3-low": "low", "o3-high": "high", "mini": "minimal"}
    assert settings_columns(seated) == {"reasoning effort": ["low", "high", "", "minimal"], "thinking": ["", "", "on", ""], "reasoning budget": ["", "", "4096", ""]}
    assert efforts({}) == {} and efforts(None) == {} and settings_columns([{"name": "a", "spec": "strategy/spe"}]) == {}


def test_zero_reasoning_tokens_of_a_model_that_does_not_reason_show_nothing():
    plain = pd.DataFrame({"model": ["gpt"] * 3, "reasoning_tokens": pd.array([0, 0, 0], dtype="Int64"), "finish_reason": ["stop"] * 3})
    assert not has_reasoning(plain) and per_model(plain) is None and cut_off_warnings(plain) == []
    assert per_model(plain, reasoning_models=True)["reasoning_tokens"].tolist() == [0]  # a model set to reason: its 0 is shown


def test_a_models_row_counts_reported_tokens_and_every_kind_of_cut_off():
    turns = pd.DataFrame(
        {
            "model": ["o3", "o3", "o3", "claude", "claude", "b"],
            "reasoning_tokens": pd.array([10, None, 30, 5, 7, None], dtype="Int64"),
            "finish_reason": ["stop", "length", None, "max_tokens", "end_turn", None],
            "valid": [True, False, True, False, True, True],
        }
    )
    rows = per_model(turns).set_index("model")
    assert rows.loc["o3", "reasoning_tokens"] == 40 and rows.loc["o3", "reasoning_tokens_per_turn"] == 20.0  # the mean of the reported counts
    assert rows.loc["b", "reasoning_tokens"] == NOT_REPORTED and rows.loc["b", "reasoning_tokens_per_turn"] == NOT_REPORTED
    assert rows.loc["o3", "cut_off_turns"] == 1 and abs(rows.loc["o3", "cut_off_share"] - 1 / 3) < 1e-12
    assert rows.loc["claude", "cut_off_turns"] == 1 and rows.loc["b", "cut_off_turns"] == 0
    warned = cut_off_warnings(turns)
    assert len(warned) == 2 and warned[0].startswith("claude: 1 of its 2 turns (50%)") and "<code>max_tokens</code>) before their answer was complete and are invalid" in warned[0]


def test_effort_columns_sit_beside_the_model_and_change_no_other_cell(tmp_path):
    df = pd.DataFrame({"model_alice": ["o3-low", "b"], "model_bob": ["b", "o3-high"], "x": [0.1 + 0.2, None]})
    out = with_efforts(df, {"o3-low": "low", "o3-high": "high"})
    assert list(out.columns) == ["model_alice", "effort_alice", "model_bob", "effort_bob", "x"]
    assert out["effort_alice"].tolist() == ["low", ""] and out["effort_bob"].tolist() == ["", "high"]
    assert with_efforts(df, {}) is df
    path = tmp_path / "t.csv"
    pd.DataFrame({"model": ["o3-low", "b"], "effect": [0.30000000000000004, 1e-17], "note": ['a, "quoted"', ""]}).to_csv(path, index=False)
    before = path.read_text()
    assert add_efforts_to_csv(path, {"o3-low": "low"})
    after = path.read_text().splitlines()
    assert after[0] == "model,effort,effect,note"
    assert [line.replace(",low,", ",", 1).replace("b,,", "b,", 1) for line in after[1:]] == before.splitlines()[1:]
    assert not add_efforts_to_csv(path, {"o3-low": "low"})  # once only


def test_the_merge_finds_each_turns_row_and_leaves_others_empty():
    found = {("g2", 1): ("thought", 12, "stop"), ("g1", 0): (None, None, "length"), ("elsewhere", 0): ("x", 1, "stop"), ("g1", 9): ("y", 2, "stop")}
    cols = _reasoning_columns(found, ["g1", "g1", "g2", "g2"], [0, 1, 0, 1])
    assert cols["reasoning"] == [None, None, None, "thought"]
    assert cols["finish_reason"] == ["length", None, None, "stop"]
    assert [None if pd.isna(v) else int(v) for v in cols["reasoning_tokens"]] == [None, None, None, 12]
    empty = _reasoning_columns({}, ["g1"], [0])
    assert empty["reasoning"] == [None] and pd.isna(empty["reasoning_tokens"][0]) and str(empty["reasoning_tokens"].dtype) == "Int64"


def test_the_report_states_the_temperature_a_model_is_sent():
    """A reasoning model of OpenAI gets no temperature: the report says so instead of the one set."""
    from agorabench.analysis.report import _temperature

    spec = {"seed": 3}
    assert _temperature({"name": "o3", "spec": "openai/o3", "temperature": 0.0}, spec).startswith("provider default (none sent: the model reasons")
    assert _temperature({"name": "m", "spec": "openai/gpt-4o-mini", "temperature": 0.0}, spec) == "0.0 (seed 3)"
    assert _temperature({"name": "q", "spec": "vllm/Qwen3-8B@http://127.0.0.1:1/v1", "temperature": 0.6}, spec) == "0.6 (seed 3)"
    assert _temperature({"name": "s", "spec": "strategy/self-max"}, spec) == "-"
