"""The demo's report tells what its own database says (issue 41 item 1): a warning counts the turns
the runner stored as invalid; a valid turn whose reply was cut off at the output token limit
after its choice was complete is noted as valid, never called invalid; "lower the effort" is said
only of a model run with an effort.

The study is ``studies/demo.toml`` as shipped (the embedded model, constrained) with its grid
narrowed to matrix M3 and the lagging status cue, where the embedded model's free-text field runs
past the limit (12 games, 12 model calls, where the whole demo makes 72 calls in a minute or
more), and its ``max_tokens`` halved from 128 to 64: the model picks the same choices (greedy, the
choice comes before the free text), the same turns are valid, and the same nine of twelve are cut
off, at half the generated tokens (the test's run 25 -> 16 CPU s)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from support.helpers import ROOT, agora

from agorabench.analysis.frames import turns_df
from agorabench.analysis.reasoning import CUT_OFF, cut_off_notes, cut_off_warnings
from agorabench.store.store import Store


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo study (grid narrowed to M3, lagging) played on the embedded model; (study path, db, report folder)."""
    text = (ROOT / "studies" / "demo.toml").read_text(encoding="utf-8")
    narrowed = text.replace('matrix = ["M1", "M2", "M3"]', 'matrix = ["M3"]').replace('peer_status = ["leading", "lagging"]', 'peer_status = ["lagging"]')
    narrowed = narrowed.replace("max_tokens = 128", "max_tokens = 64")  # cut off sooner: the same choices, fewer tokens
    assert narrowed.count("\n") == text.count("\n") and 'matrix = ["M3"]' in narrowed and '["lagging"]' in narrowed, "studies/demo.toml's grid changed: update this test"
    assert narrowed.count("max_tokens = 64") == 1, "studies/demo.toml's max_tokens changed: update this test"
    tmp = tmp_path_factory.mktemp("demo")
    study, db, out = tmp / "demo.toml", tmp / "demo.db", tmp / "report"
    study.write_text(narrowed, encoding="utf-8")
    from agorabench.cli import main

    assert main(["run", str(study), "--db", str(db), "--quiet"]) == 0
    assert main(["report", str(study), "--db", str(db), "--out", str(out)]) == 0
    return study, db, out


def _stored_turns(db) -> pd.DataFrame:
    store = Store(str(db), read_only=True)
    try:
        return turns_df(store, "demo", transcripts=False)
    finally:
        store.dispose()


def test_the_demo_report_warns_of_nothing_its_database_contradicts(demo):
    _, db, out = demo
    turns = _stored_turns(db)
    smol = turns[turns["model"] == "smollm2-135m"]
    cut = smol["finish_reason"].isin(CUT_OFF)
    assert len(smol) == 12 and cut.any(), "the demo no longer reaches the output token limit on M3: this test shows nothing"
    invalid = int((~smol["valid"].astype(bool)).sum())
    cut_valid = int((cut & smol["valid"].astype(bool)).sum())
    page = (out / "index.html").read_text(encoding="utf-8")
    warnings = page[page.index("id='warnings'") : page.index("</div>", page.index("id='warnings'"))] if "id='warnings'" in page else ""
    if invalid == 0:  # what the embedded model does today: every turn valid, so no warning about it
        assert "smollm2-135m" not in warnings, warnings
    for line in re.findall(r"<li>(.*?)</li>", warnings):
        if "cut off" in line:
            stated = int(re.search(r": (\d+) of its", line).group(1))
            assert stated == int((cut & ~smol["valid"].astype(bool)).sum())
    assert "lower the effort" not in page  # the demo's models have no effort
    note = f"smollm2-135m: {cut_valid} valid turn{'s' if cut_valid != 1 else ''} {'were' if cut_valid != 1 else 'was'} cut off at the output token limit after"
    assert (note in page) == (cut_valid > 0), cut_valid
    per_model = pd.read_csv(out / "turns-per-model.csv").set_index("model")
    assert abs(per_model.loc["smollm2-135m", "invalid_rate"] - invalid / len(smol)) < 1e-9


def test_invalid_cut_offs_are_warned_with_advice_that_fits_the_model():
    turns = pd.DataFrame(
        {
            "model": ["o3-high", "o3-high", "plain", "plain", "plain", "claude"],
            "finish_reason": ["length", "length", "length", "stop", "length", "max_tokens"],
            "valid": [False, True, True, True, True, False],
        }
    )
    spec = {"models": [{"name": "o3", "reasoning_effort": ["high"]}, {"name": "plain", "spec": "local"}, {"name": "claude", "thinking": "on", "reasoning_budget": 1024}]}
    warned = cut_off_warnings(turns, spec)
    assert len(warned) == 2 and not any(w.startswith("plain") for w in warned)  # plain's cut-offs were valid
    o3 = next(w for w in warned if w.startswith("o3-high"))
    assert o3.startswith("o3-high: 1 of its 2 turns (50%)") and "lower the effort (<code>high</code>)" in o3 and "reasoning_budget" in o3
    claude = next(w for w in warned if w.startswith("claude"))
    assert "reasoning_budget" in claude and "effort" not in claude
    assert cut_off_warnings(turns.assign(model="plain"), {"models": [{"name": "plain"}]})[0].endswith("raise <code>max_tokens</code>.")
    notes = cut_off_notes(turns)
    assert notes == [
        "o3-high: 1 valid turn was cut off at the output token limit after its choice was complete (the text after the choice is shortened; the choice counts).",
        "plain: 2 valid turns were cut off at the output token limit after their choice was complete (the text after the choice is shortened; the choice counts).",
    ]


def test_the_show_examples_work_on_the_demo(demo, capsys):
    """Each ``agora show --help`` example on the demo (issue 41 item 13) shows a game of the demo's
    database; a game id in one is an id of the demo's design (the database here holds part of it)."""
    import shlex

    from agorabench.cli import EXAMPLES
    from agorabench.core.study import load_study

    _, db, _ = demo
    ids = {spec.id for spec in load_study(ROOT / "studies" / "demo.toml").expand()}
    examples = [shlex.split(line.split("#")[0]) for line in EXAMPLES["show"].splitlines() if "studies/demo.toml" in line]
    assert len(examples) >= 3
    for words in examples:
        assert words[:2] == ["agora", "show"]
        args = words[2:]
        named = [a for a in args[1:] if not a.startswith("-") and (not args[args.index(a) - 1].startswith("--"))]
        if named:  # a game id prefix: one game of the demo's design
            assert len([i for i in ids if i.startswith(named[0])]) == 1, words
            continue
        rc, out, err = agora(capsys, "show", *[str(ROOT / a) if a == "studies/demo.toml" else a for a in args], "--db", str(db))
        assert rc == 0 and out.startswith("game "), (words, err)
