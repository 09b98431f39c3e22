"""Commons (GovSim) rules, metrics and scripted strategies, with results theory predicts exactly."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from agorabench.core.game import Prompts
from agorabench.core.table import Reply, Table
from agorabench.games.commons.actions import Harvest
from agorabench.games.commons.commons import Commons
from agorabench.games.commons.config import CommonsConfig
from agorabench.games.commons.rules import allocate, commons_metrics
from agorabench.games.commons.scenario import get_scenario, scenarios
from agorabench.games.commons.strategies import STRATEGIES

ALL_SCENARIOS = sorted(scenarios())


def play(seats: dict[str, str], seed: int = 1, players: dict | None = None, **cfg):
    """Play one game with strategies by name (``"*"`` fills unnamed roles)."""
    config = CommonsConfig(**cfg)
    roles = Commons.roles(config)
    seated = {r: STRATEGIES[seats.get(r, seats.get("*"))]() for r in roles if r not in (players or {})}
    seated.update(players or {})
    table = Table(seated, seed=seed)
    game = Commons(config, Prompts(Commons.prompt_dir))
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


def gains(outcome) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in outcome["months"]:
        for r, c in m["collected"].items():
            out[r] = out.get(r, 0) + c
    return out


def test_every_scenario_in_english_and_japanese():
    assert {s for s, _ in ALL_SCENARIOS} == {"fishery", "pasture", "pollution", "trash"}
    assert {lang for _, lang in ALL_SCENARIOS} == {"en", "ja"}
    assert len(ALL_SCENARIOS) == 8
    assert get_scenario("trash", "en").inverse and not get_scenario("fishery", "ja").inverse


@pytest.mark.parametrize("scenario,language", ALL_SCENARIOS)
def test_all_sustainable_survive_with_full_marks(scenario, language):
    outcome, m, table = play({"*": "sustainable", "manager": "summariser"}, scenario=scenario, language=language, summariser=True)
    assert outcome["months_played"] == 12 and not outcome["collapsed"]
    assert gains(outcome) == {f"agent_{i}": 120 for i in range(5)}
    assert m["survival_time"] == 12 and m["survived"] == 1
    assert m["total_gain"] == 120 and m["efficiency"] == 100 and m["equality"] == 100 and m["over_usage"] == 0
    assert table.invalid_turns == 0
    # the summariser extracted the proposed limit and every agent was told and reminded of it
    assert outcome["months"][0]["agreed_limit"] == 10
    harvest_prompt = outcome and table.transcripts["agent_0"]
    assert sum("10" in msg["content"] for msg in harvest_prompt if msg["role"] == "user") > 12


def test_all_greedy_collapse_in_month_one():
    outcome, m, _ = play({"*": "greedy"}, seed=3)
    assert outcome["months_played"] == 1 and outcome["collapsed"]
    month = outcome["months"][0]
    assert month["requested"] == {f"agent_{i}": 100 for i in range(5)}
    assert sum(month["collected"].values()) == 100 and month["stock_after"] == 0
    assert m["survival_time"] == 1 and m["survived"] == 0 and m["over_usage"] == 100
    assert m["efficiency"] == pytest.approx(100 * 100 / 600)
    assert m["total_gain"] == 20


def test_greedy_in_trash_removes_nothing_and_collapses():
    outcome, m, _ = play({"*": "greedy"}, scenario="trash")
    assert outcome["months"][0]["collected"] == {f"agent_{i}": 0 for i in range(5)}
    # total loss as Table 5: the most an agent could remove (130) minus what it removed (0)
    assert outcome["collapsed"] and m["survival_time"] == 1 and m["total_loss"] == 130 and m["over_usage"] == 100


def test_same_seed_same_run_including_random_allocation():
    a, _, ta = play({"*": "greedy"}, seed=11)
    b, _, tb = play({"*": "greedy"}, seed=11)
    assert a == b
    assert [(t.role, t.raw, t.metrics) for t in ta.turns] == [(t.role, t.raw, t.metrics) for t in tb.turns]
    allocations = {tuple(play({"*": "greedy"}, seed=s)[0]["months"][0]["collected"].values()) for s in range(8)}
    assert len(allocations) > 1  # the allocation really is random across seeds


def test_allocation_rules():
    rng = random.Random(0)
    assert allocate({"a": 10, "b": 20}, 100, rng) == {"a": 10, "b": 20}
    for seed in range(20):
        got = allocate({"a": 70, "b": 5, "c": 50}, 100, random.Random(seed))
        assert sum(got.values()) == 100
        assert got["a"] <= 70 and got["b"] <= 5 and got["c"] <= 50


def test_free_rider_exploits_sustainable_group_in_month_two():
    outcome, m, _ = play({"*": "sustainable", "agent_4": "free-rider"})
    first, second = outcome["months"]
    assert first["requested"] == {f"agent_{i}": 10 for i in range(5)}
    assert second["requested"]["agent_4"] == 100 and second["stock_after"] == 0
    assert outcome["collapsed"] and m["survival_time"] == 2


def test_all_free_riders_defect_together_in_month_two():
    # free-riders defect when all others were sustainable: in month 1 all are, so all defect in month 2
    outcome, m, _ = play({"*": "free-rider"})
    assert m["survival_time"] == 2


def test_follow_limit_takes_the_agreed_limit():
    outcome, m, _ = play({"*": "follow-limit", "agent_0": "sustainable", "manager": "summariser"}, summariser=True, months=3)
    assert [mo["agreed_limit"] for mo in outcome["months"][:2]] == [10, 10]
    assert outcome["months"][1]["requested"] == {f"agent_{i}": 10 for i in range(5)}
    assert m["survived"] == 1


def test_follow_limit_without_summariser_uses_last_proposal():
    outcome, _, _ = play({"*": "follow-limit"}, months=2, summariser=False)
    assert outcome["months"][0]["agreed_limit"] is None
    assert outcome["months"][1]["requested"] == {f"agent_{i}": 10 for i in range(5)}


def test_discussion_stays_within_k_turns():
    # legacy month order: no chat after the last month, K remarks per chat
    legacy = {"protocol": "legacy"}
    outcome, _, table = play({"*": "greedy", "agent_0": "sustainable", "agent_1": "sustainable"}, max_conversation_steps=2, months=1, **legacy)
    assert outcome["months"][0]["discussion"] == []
    outcome, _, table = play({"*": "sustainable"}, max_conversation_steps=2, months=3, **legacy)
    for month in outcome["months"][:-1]:
        assert len(month["discussion"]) == 2
    assert sum(1 for t in table.turns if t.phase == "discuss") == 4
    # original order: a chat every month, the manager's report being the first of the K steps
    outcome, _, table = play({"*": "sustainable"}, max_conversation_steps=2, months=3)
    assert [len(m["report"]) + len(m["discussion"]) for m in outcome["months"]] == [2, 2, 2]
    assert sum(1 for t in table.turns if t.phase == "discuss") == 3
    outcome, _, _ = play({"*": "sustainable"}, max_conversation_steps=10, months=2)
    chat = outcome["months"][0]["discussion"]
    assert len(chat) == 5 and chat[-1]["end"]  # everyone spoke once, then the last closed the chat
    assert len({m["speaker"] for m in chat}) == 5


def test_universalization_switch():
    _, _, on = play({"*": "sustainable"}, universalization=True, months=1)
    _, _, off = play({"*": "sustainable"}, universalization=False, months=1)
    text_on = on.turns[0].messages[-1]["content"]
    text_off = off.turns[0].messages[-1]["content"]
    assert "more than 10 tons" in text_on and "more than 10 tons" not in text_off


class Nonsense:
    async def act(self, request):
        return Reply(text="I would rather not say.")


def test_invalid_harvest_is_reasked_then_zero_and_marked_invalid():
    outcome, _, table = play({"*": "sustainable"}, players={"agent_2": Nonsense()}, months=2, max_conversation_steps=0)
    assert outcome["months"][0]["requested"]["agent_2"] == 0
    assert outcome["months"][0]["valid"]["agent_2"] is False
    bad = [t for t in table.turns if t.role == "agent_2"]
    assert all(not t.valid and t.retries == 2 for t in bad) and len(bad) == 2


def test_harvest_parses_answer_lines():
    assert Harvest.parse("I think 12 is fair.\nAnswer: 12").amount == 12
    assert Harvest.parse("Answer：7.9").amount == 7


def _months(rows):
    return [{"stock_before": b, "stock_after": a, "collected": dict(enumerate(c))} for b, a, c in rows]


def test_metric_formulas_and_variants():
    fish = get_scenario("fishery", "en")
    roles = [0, 1]
    months = [{"stock_before": 100, "stock_after": 5, "collected": {0: 90, 1: 5}}]
    strict = commons_metrics(months, roles, fish, 12, "strict")
    inclusive = commons_metrics(months, roles, fish, 12, "inclusive")
    # stopped after 1 of 12 months without a collapse: censored, survival undefined
    assert strict["survival_time"] == 1 and strict["censored"] == 1 and math.isnan(strict["survived"])
    assert inclusive["survival_time"] == 1
    # equality: 1 − (|90−5|·2)/(2·2²·47.5) = 1 − 170/380
    assert strict["equality"] == pytest.approx(100 * (1 - 170 / 380))
    # per-agent threshold 50/2 = 25: one of two over-uses; group threshold 50: one of two too
    assert strict["over_usage"] == 50
    months = [{"stock_before": 100, "stock_after": 60, "collected": {0: 30, 1: 10}}]
    assert commons_metrics(months, roles, fish, 12, over_usage_threshold="per_agent")["over_usage"] == 50
    assert commons_metrics(months, roles, fish, 12, over_usage_threshold="group")["over_usage"] == 0
    # collapse exactly at the threshold: strict (< 5) survives the month, inclusive (≤ 5) does not
    months = [{"stock_before": 100, "stock_after": 5, "collected": {0: 50, 1: 45}}, {"stock_before": 10, "stock_after": 10, "collected": {0: 0, 1: 0}}]
    assert commons_metrics(months, roles, fish, 12, "strict")["survival_time"] == 2
    assert commons_metrics(months, roles, fish, 12, "inclusive")["survival_time"] == 1
    trash = get_scenario("trash", "en")
    months = [{"stock_before": 100, "stock_after": 50, "collected": {0: 30, 1: 20}}]
    t = commons_metrics(months, roles, trash, 1)
    # Table 5: total loss = (100 + 0·50 − 50)/2; efficiency 100·50/50; agent 1 removed < 25
    assert t["efficiency"] == 100 and t["over_usage"] == 50 and t["total_loss"] == 25
    months = [{"stock_before": 100, "stock_after": 0, "collected": {0: 60, 1: 40}}]
    t = commons_metrics(months, roles, trash, 1)
    assert t["efficiency"] == pytest.approx(100 * 50 / 100) and t["total_loss"] == 0


def test_unknown_scenario_is_a_config_error():
    with pytest.raises(ValueError, match="no scenario"):
        CommonsConfig(scenario="forest")
    with pytest.raises(ValueError):
        CommonsConfig(language="fr")


def test_roles():
    assert Commons.roles(CommonsConfig(n_agents=3, summariser=False)) == ("agent_0", "agent_1", "agent_2")
    assert Commons.roles(CommonsConfig(n_agents=2))[-1] == "manager"  # the limit extraction, on by default
    assert Commons.roles(CommonsConfig(n_agents=2, communication=False)) == ("agent_0", "agent_1")


def test_collapse_threshold_override():
    outcome, m, _ = play({"*": "greedy"}, collapse_threshold=0, months=3, max_conversation_steps=0)
    # nothing left is not "below 0": the game goes on with an empty (non-regrowing) lake
    assert not outcome["collapsed"] and outcome["months_played"] == 3
    assert [mo["stock_before"] for mo in outcome["months"]] == [100, 0, 0]
    assert m["survival_time"] == 3 and m["total_gain_sum"] == 100


class NamesNext:
    """Always names the agent two seats on as the next speaker."""

    def __init__(self, names):
        self.names = names

    async def act(self, request):
        from agorabench.games.commons.actions import Utterance

        obs = request.prompt.observation
        if obs["phase"] == "harvest":
            return Reply(text="Answer: 5", action=Harvest(amount=5))
        me = int(obs["me"].split("_")[1])
        return Reply(text="", action=Utterance(message="hi", next_speaker=self.names[(me + 2) % 5]))


def test_chosen_next_speaker_is_honoured_and_chat_capped():
    names = ["John", "Kate", "Jack", "Emma", "Luke"]
    players = {f"agent_{i}": NamesNext(names) for i in range(5)}
    outcome, _, _ = play({}, players=players, months=2, max_conversation_steps=7, summariser=False)
    chat = [int(m["speaker"].split("_")[1]) for m in outcome["months"][0]["discussion"]]
    assert len(chat) == 6  # the manager's report is the first of the 7 steps
    assert all((b - a) % 5 == 2 for a, b in zip(chat, chat[1:]))
    outcome, _, _ = play({}, players=players, months=2, max_conversation_steps=6, speaker_order="round_robin", summariser=False)
    chat = [int(m["speaker"].split("_")[1]) for m in outcome["months"][0]["discussion"]]
    assert all((b - a) % 5 == 1 for a, b in zip(chat, chat[1:]))
