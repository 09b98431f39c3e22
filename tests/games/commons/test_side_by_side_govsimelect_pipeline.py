"""AgentElect's whole persona pipeline beside ours (``scripts/side_by_side_govsimelect.py
--pipeline`` with ``scripts/govsimelect_original_stub.py``): the loopback model's rules read both
engines' prompts the same way, the stub's changes to the successor fail loudly when their target
is missing, and, where a copy of ``rfaulkner/GovSimElect`` and an interpreter with its light
dependencies are at hand, both whole runs give the same agendas, ballots, votes, tallies, winners,
policies, stock, catches, survival and welfare, and every prompt the same facts."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.helpers import load_script

MIRRORS = Path(os.environ.get("AGORA_GOVSIM_MIRRORS", "/work/.mirror"))
#: The successor's commit the comparison was written for.
COMMIT = "8cf0aba"
#: What the successor's code imports that this project does not install.
NEEDS = ("numpy", "regex", "pygtrie", "backoff", "omegaconf", "pettingzoo")


SUCCESSOR_VOTE = """You are Luke, a fisherman, and you fish every month in a lake along with other fishermen.
Key memories of Luke (format: YYYY-MM-DD: memory):
- 2024-01-01: Newly elected leader Kate's round 0 agenda: Each fisher catches at most 5 tons a month.

Task: Select a mayor for the fisheries union among a list of candidates and provide your rationale for your selection.
Candidate positions:
- Jack: Each fisher catches at most 12 tons a month.
- Emma: Each fisher catches at most 8 tons a month.
Let's think step-by-step.
Task: Based on fishing policies and agendas, who would you vote for? Jack, Emma? Put the final answer after "Vote:", example "Vote: John\""""


def test_the_stubs_rules_read_the_successors_prompts():
    stub = load_script("govsimelect_original_stub")  # loads nothing of the successor on import
    assert stub.kind_of(SUCCESSOR_VOTE) == "vote"
    assert stub.decide("vote", SUCCESSOR_VOTE, []) == "I weigh the agendas. Vote: Jack"
    assert stub.vote_for("Olivia", ["Jack", "Emma"]) == "Emma" and stub.vote_for("Luke", ["Jack", "Emma"]) == "Jack"
    # a memory that quotes an agenda is not the agenda task
    assert stub.kind_of("- 2024-01-01: My agenda as leader: x\nTask: Rate the significance of an event") == "rate"
    harvest = "You are Kate, a fisherman\nThe current policy following the mayor's agenda is the following: Each fisher catches at most 5 tons a month.\nTask: With a fishing range set between 0-100, how many tons of fish would you catch this month?"
    assert stub.decide(stub.kind_of(harvest), harvest, []) == "I follow the policy. Answer: 5 tons."
    assert stub.quota("No specific guidance.") == stub.DEFAULT_CATCH
    names = ["John", "Kate", "Jack"]
    assert stub.chat_turn("Jack", 0, names) == (stub.CHAT_REMARKS <= 1, "John")


def test_a_stub_patch_whose_target_is_missing_stops_the_run():
    stub = load_script("govsimelect_original_stub")

    class ElectionPhase:
        async def execute(self, ctx):
            return ctx

    stub.patch(ElectionPhase, "execute", lambda old: old)
    with pytest.raises(stub.PatchError, match=r"cannot patch ElectionPhase\.run: the successor has no such attribute"):
        stub.patch(ElectionPhase, "run", lambda old: old)
    with pytest.raises(SystemExit, match=r"cannot patch run\.PersonaAgent"):
        stub.patch(SimpleNamespace(__name__="run"), "PersonaAgent", lambda old: old)


def _interpreter() -> str | None:
    """An interpreter with the successor's light dependencies: ``AGORA_GOVSIMELECT_PYTHON`` or this one."""
    for python in filter(None, (os.environ.get("AGORA_GOVSIMELECT_PYTHON"), sys.executable)):
        if subprocess.run([python, "-c", "import " + ", ".join(NEEDS)], capture_output=True).returncode == 0:
            return python
    return None


def test_whole_runs_match_the_successors_on_the_loopback_model(tmp_path, capsys):
    repo = MIRRORS / "rfaulkner+GovSimElect" / "repo"
    if not repo.exists():
        pytest.skip(f"no copy of rfaulkner/GovSimElect at {repo} (fetch it, or set AGORA_GOVSIM_MIRRORS)")
    python = _interpreter()
    if python is None:
        pytest.skip(f"no interpreter with the successor's dependencies ({', '.join(NEEDS)}): pip install -e '.[sidebyside]', or set AGORA_GOVSIMELECT_PYTHON")
    if shutil.which("git") is None:
        pytest.skip("git is needed to read the successor's copy")
    archive = subprocess.run(["git", "--git-dir", str(repo), "archive", "--format=tar", COMMIT], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"the copy at {repo} has no commit {COMMIT}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tmp_path / "successor", filter="data")
    script = load_script("side_by_side_govsimelect")
    # seed 5: three elections (a four-way tie in the second); the leader writes the report
    assert script.main(["--original", str(tmp_path / "successor"), "--pipeline", "--python", python, "--months", "3", "--seed", "5", "--disinformation"]) == 0
    out = capsys.readouterr().out
    assert out.count("winner                 same") == 3 and "DIFFERENT" not in out
    assert "| vote | 12 / 12 | 12 of 12 |" in out and "| report | 3 / 3 | 3 of 3 |" in out
    assert "social welfare         same" in out and out.rstrip().endswith("no difference")
