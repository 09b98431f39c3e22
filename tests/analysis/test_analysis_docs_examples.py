"""The Python examples of docs/analysis.md run as written (issue 41 item 13): every ```python
block, in order, in one namespace (as a reader runs them in one notebook), in a folder whose
``runs/`` holds the databases they name, each played here from a small scripted study of that
name (seconds). A function renamed or moved breaks this test, not a reader's first hour."""

from __future__ import annotations

import os
import re

import pytest
from support.helpers import ROOT
from support.studies import commons, envy_points, paper_grid, scripted, study_toml

DOC = ROOT / "docs" / "analysis.md"

#: The databases the examples read, each with the scripted study that fills it.
DATABASES = {
    "envy_points": envy_points("envy_points", [scripted("self-max"), scripted("random")], seed=5, grid=paper_grid(margin=["significant"], peer_move=["A", "D"])),
    "fs": envy_points("fs", [scripted("logit", "fehr-schmidt-logit", params={"alpha": 1.0, "beta": 0.3, "lam": 1.5}), scripted("self-max")], seed=7, grid=paper_grid(margin=["significant"])),
    "commons_fishery": commons("commons_fishery", repeats=2, seed=5, fixed={"scenario": "fishery", "n_agents": 3, "months": 3, "max_conversation_steps": 2}),
    "glee_full": study_toml(
        "glee_full",
        "glee.bargaining",
        matchups="all_pairs",  # every ordered pair, a model against itself too: the meta-game needs them
        seed=3,
        repeats=2,
        grid={"delta_a": [0.8, 0.95], "money": [100, 1000]},
        fixed={"horizon": 3},
        models=[scripted("spe"), scripted("always-accept"), scripted("always-reject")],
    ),
}


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A folder whose runs/ holds every database the examples name."""
    folder = tmp_path_factory.mktemp("docs")
    (folder / "runs").mkdir()
    from agorabench.cli import main

    for name, text in DATABASES.items():
        path = folder / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        assert main(["run", str(path), "--db", str(folder / "runs" / f"{name}.db"), "--quiet"]) == 0, name
    return folder


def test_every_python_example_of_the_analysis_guide_runs(runs, monkeypatch):
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    named = set(re.findall(r'runs/(\w+)\.db', "\n".join(blocks)))
    assert named <= set(DATABASES), f"an example reads a database this test does not build: {sorted(named - set(DATABASES))}"
    monkeypatch.chdir(runs)
    namespace: dict = {}
    for i, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"docs/analysis.md python block {i}", "exec"), namespace)
        except Exception as exc:  # the block and the error, not only a traceback into exec
            pytest.fail(f"docs/analysis.md python block {i} fails: {type(exc).__name__}: {exc}\n{block}")
    assert os.getcwd() == str(runs)
