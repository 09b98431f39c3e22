"""Invalid answers in commons (issue 21, item 3): ours re-asks and then applies the fallback (take
nothing; an empty remark, the chat goes on), where the original ended the chat at once; each game
counts such harvests and remarks, so the export and report say how often it happened."""

from __future__ import annotations

import math

from agorabench.conformance import config_of, play
from agorabench.core.table import Reply
from agorabench import families


class Mumbles:
    """Never gives a usable answer."""

    async def act(self, request):
        return Reply(text="I am not sure what to say.")


def test_unusable_answers_are_counted_per_game_and_the_chat_goes_on():
    config = config_of("commons").model_copy(update={"memory": "transcript"})
    roles = families.load_game("commons").active_roles(config)
    played = play("commons", {r: Mumbles() for r in roles}, config=config)
    agents = [r for r in roles if r.startswith("agent_")]
    months = played.outcome["months"]
    assert played.metrics["invalid_harvests"] == len(agents) * len(months)
    remarks = [s for m in months for s in m.get("discussion") or [] if not s.get("report")]
    assert len(remarks) > 1  # not ended at the first unusable remark, as the original would
    assert played.metrics["invalid_remarks"] == sum(not s["valid"] for s in remarks) == len(remarks)
    assert all(v == 0 for m in months for v in m["collected"].values())


def test_imported_records_without_validity_say_unknown():
    from agorabench.games.commons.rules import commons_metrics
    from agorabench.games.commons.scenario import get_scenario

    months = [{"stock_before": 100, "stock_after": 100, "collected": {"agent_0": 0}}]
    m = commons_metrics(months, ["agent_0"], get_scenario("fishery", "en"), 1)
    assert math.isnan(m["invalid_harvests"]) and math.isnan(m["invalid_remarks"])
