"""A ``--model`` of any kind is part of the run's design (issue 41 item 2): the games a run plays
with models given on the command line, an outside agent (``http/URL``) among them, are shown,
reported and exported from the study file without ``--all``, as the same models written in the
study file would be.

The outside agent is the shipped example (its own process on 127.0.0.1); the study is a scripted
ultimatum game, so the whole run takes a second."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from support.helpers import ROOT, agora
from support.studies import scripted, study_toml

from agorabench.core.coverage import design, run_seating
from agorabench.core.study import load_study

EXAMPLE = ROOT / "examples" / "outside_agent.py"

STUDY = study_toml("cli-models", "ultimatum", matchups="ordered_pairs", seed=0, models=[scripted("fair", "fair"), scripted("selfish", "selfish")])


@pytest.fixture
def agent_url() -> Iterator[str]:
    """The shipped example agent on 127.0.0.1 (``--port 0``); its URL."""
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.removeprefix("listening on ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_run_with_an_outside_agent_on_the_command_line_is_shown_reported_and_exported(agent_url, write_study, tmp_path, capsys):
    path = write_study(STUDY)
    db = str(tmp_path / "study.db")
    rc, out, err = agora(capsys, "run", str(path), "--db", db, "--model", f"http/{agent_url}", "--model", "strategy/fair", "--quiet")
    assert rc == 0, err
    assert "0 model calls and 2 outside-agent requests" in out  # one decision of the agent per game, counted (issue 41 item 13)
    rc, out, err = agora(capsys, "report", str(path), "--db", db, "--out", str(tmp_path / "report"))
    assert rc == 0 and "outside the study file's current design" not in err, err
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert f"http/{agent_url}" in page and "--all" not in page  # nothing left out
    rc, out, err = agora(capsys, "export", str(path), "--db", db, "--out", str(tmp_path / "games.csv"))
    assert rc == 0 and "left out" not in err, err
    rows = (tmp_path / "games.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 3 and all(f"http/{agent_url}" in r for r in rows[1:])  # both seatings of the ordered pair
    rc, out, err = agora(capsys, "show", str(path), "--db", db)
    assert rc == 0 and f"http/{agent_url}" in out, err


@pytest.mark.parametrize(
    "models",
    [
        ["http/http://127.0.0.1:9/act", "strategy/fair"],
        ["http/https://agent.example/act", "local"],
        ["openai/gpt-4o-mini", "strategy/selfish"],
        ["mymodel@http://127.0.0.1:9/v1", "local"],
        ["vllm/qwen@http://127.0.0.1:9/v1", "http/http://127.0.0.1:9/act"],
    ],
)
def test_every_kind_of_command_line_model_is_in_the_recorded_design(models, write_study):
    """What a run records of its ``--model`` seating brings back exactly the ids it plays."""
    path = write_study(STUDY)
    run = load_study(path, models=models)
    played = {spec.id for spec in run.expand()}
    recorded = run_seating(run)
    ids, entries = design(load_study(path), [recorded], played)
    assert played <= ids and {e["name"] for e in entries} == {m.split("@")[0] if not m.startswith("http/") else m for m in models}
