"""The event loop of a run: uvloop where installed (unless AGORA_EVENT_LOOP=asyncio), asyncio's
own loop without it, silently; a study plays the same games on either."""

import asyncio
import sys

import pytest

from agorabench import loop
from agorabench.core.runner import Runner, run_study
from agorabench.core.study import load_study
from support.studies import envy_points, paper_grid, scripted

STUDY = envy_points("loops", [scripted("always-b"), scripted("self-max")], grid=paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=["A", "D"]))


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_uvloop_is_the_default_where_installed(monkeypatch):
    pytest.importorskip("uvloop")
    monkeypatch.delenv(loop.ENV, raising=False)
    assert loop.loop_name() == "uvloop"
    assert loop.run(_loop_module()).startswith("uvloop")


def test_asyncio_when_asked_or_without_uvloop(monkeypatch):
    monkeypatch.setenv(loop.ENV, "asyncio")
    assert loop.loop_name() == "asyncio"
    assert loop.run(_loop_module()).startswith("asyncio")
    monkeypatch.delenv(loop.ENV)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if it were not installed: import fails
    assert loop.loop_name() == "asyncio"
    assert loop.run(_loop_module()).startswith("asyncio")


@pytest.mark.parametrize("choice", ["uvloop", "asyncio"])
def test_a_study_runs_on_the_chosen_loop(choice, monkeypatch, write_study, tmp_path):
    if choice == "uvloop":
        pytest.importorskip("uvloop")
        monkeypatch.delenv(loop.ENV, raising=False)
    else:
        monkeypatch.setenv(loop.ENV, "asyncio")
    seen = []
    original = Runner.run

    async def spy(self):
        seen.append(await _loop_module())
        return await original(self)

    monkeypatch.setattr(Runner, "run", spy)
    study = load_study(write_study(STUDY))
    stats, _ = run_study(study, tmp_path / "loops.db", concurrency=4, progress=False)
    assert seen and seen[0].startswith(choice)
    assert stats.done == 4 and stats.errors == 0
