"""The Mayor's report in the original GovSim's words (``report_wording = "original"``): its
sentences for every English scenario, the default's configuration (so every game id) unchanged,
and a clear refusal where the original has no such wording."""

from __future__ import annotations

import asyncio

import pytest

from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.commons.commons import Commons
from agorabench.games.commons.config import CommonsConfig
from agorabench.games.commons.strategies import STRATEGIES


def opening(**cfg) -> list[dict]:
    """The steps that open month 1's chat when every agent takes the sustainable share."""
    config = CommonsConfig(months=1, **cfg)
    table = Table({r: STRATEGIES["sustainable"]() for r in Commons.roles(config)}, seed=1)
    outcome = asyncio.run(Commons(config, Prompts(Commons.prompt_dir)).play(table))
    return outcome["months"][0]["report"]


@pytest.mark.parametrize(
    "scenario, expected",
    [
        ("fishery", "Ladies and gentlemen, let me give you the monthly fishing report. John caught 25 tons of fish. Kate caught 25 tons of fish."),
        ("pasture", "Ladies and gentlemen, let me give you the monthly pasture report. John consumed 25 hectares of grass. Kate consumed 25 hectares of grass."),
        ("pollution", "Ladies and gentlemen, let me give you the monthly production report. John consumed 25% of unpolluted water. Kate consumed 25% of unpolluted water."),
    ],
)
def test_the_report_is_the_originals_sentences_joined_by_a_space(scenario, expected):
    [step] = opening(scenario=scenario, n_agents=2, report_wording="original")
    assert step["speaker"] == "manager" and step["name"] == "Mayor"
    assert step["message"] == expected


def test_trash_and_the_fisherys_individual_lines():
    [step] = opening(scenario="trash", n_agents=2, report_wording="original")
    assert step["name"] == "Landlord" and step["message"].startswith("Ladies and gentlemen, let me give you the monthly trash report. John took out ")
    steps = opening(n_agents=2, report="individual", report_wording="original")
    assert [s["message"] for s in steps] == ["This month, I caught 25 tons of fish!"] * 2


def test_the_default_is_ours_and_leaves_the_stored_configuration_as_it_was():
    assert opening(n_agents=2)[0]["message"] == "Good evening, everyone. Here are this month's catches.\nJohn caught 25 tons.\nKate caught 25 tons."
    assert "report_wording" not in CommonsConfig().model_dump()  # so no game id changes
    assert CommonsConfig(report_wording="ours").model_dump() == CommonsConfig().model_dump()
    assert CommonsConfig(report_wording="original").model_dump()["report_wording"] == "original"


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({"language": "ja"}, "fishery/ja has no original wording"),
        ({"scenario": "pasture", "report": "individual"}, 'pasture/en has no original wording for report = "individual"'),
        ({"protocol": "legacy"}, 'needs month_order = "original"'),
    ],
)
def test_refused_where_the_original_has_no_such_wording(cfg, message):
    with pytest.raises(ValueError, match=message):
        CommonsConfig(report_wording="original", **cfg)
