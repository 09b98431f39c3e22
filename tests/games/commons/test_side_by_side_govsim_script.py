"""The GovSim side-by-side scripts (``scripts/side_by_side_govsim.py``, and
``scripts/govsim_original_stub.py``, which runs in the original's interpreter): the report
wording option reaches our game as its own setting, and every change the stub makes to the
original's code fails loudly when its target is missing."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from support.helpers import load_script

from agorabench.games.commons.config import CommonsConfig


def remark_prompts(calls: list[dict]) -> list[str]:
    return [c["messages"][-1]["content"] for c in calls if c["kind"] == "remark" and c["role"] == "agent_0"]


def test_report_wording_original_is_our_games_setting():
    script = load_script("side_by_side_govsim")
    assert "report_wording" in CommonsConfig.model_fields
    ours, outcome = script.run_ours(1)
    original, _ = script.run_ours(1, report_wording="original")
    assert outcome["months"][0]["collected"]["agent_0"] == 10
    assert "monthly fishing report" not in remark_prompts(ours)[0]
    assert "Ladies and gentlemen, let me give you the monthly fishing report. John caught 10 tons of fish." in remark_prompts(original)[0]


def test_a_patch_whose_target_is_missing_stops_the_run_with_a_clear_message():
    stub = load_script("govsim_original_stub")  # loads nothing of the original on import

    class FishingPersona:
        def loop(self, obs):
            return "acted"

    stub.patch(FishingPersona, "loop", stub.fresh_clock)  # the target exists: wrapped
    with pytest.raises(SystemExit, match=r"cannot patch FishingPersona\.step: the original has no such attribute"):
        stub.patch(FishingPersona, "step", stub.fresh_clock)
    assert not hasattr(FishingPersona, "step")

    class Renamed(FishingPersona):  # its own loop renamed: the base class's is not the target
        def loop2(self, obs):
            return "acted"

    with pytest.raises(stub.PatchError, match=r"cannot patch Renamed\.loop"):
        stub.patch(Renamed, "loop", stub.fresh_clock)
    with pytest.raises(stub.PatchError, match=r"cannot patch utils\.agent_selector"):
        stub.patch(SimpleNamespace(__name__="utils"), "agent_selector", lambda old: old)


def test_fresh_clock_sets_every_seats_clock_to_the_chats_day():
    stub = load_script("govsim_original_stub")
    seats = [SimpleNamespace(current_time="2024-01-01") for _ in range(3)]
    speaker = SimpleNamespace(other_personas={str(i): s for i, s in enumerate(seats)})
    loop = stub.fresh_clock(lambda self, obs: obs.current_time)
    assert loop(speaker, SimpleNamespace(current_location="lake", current_time="2024-01-02")) == "2024-01-02"
    assert {s.current_time for s in seats} == {"2024-01-01"}  # only the restaurant sets them
    loop(speaker, SimpleNamespace(current_location="restaurant", current_time="2024-01-30"))
    assert {s.current_time for s in seats} == {"2024-01-30"}
