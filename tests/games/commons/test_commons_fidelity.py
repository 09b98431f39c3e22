"""Commons fidelity to the original GovSim protocol: what the agents are told, the month order,
the trash scenario's rules and Table 5 metrics, and the variants of the original, with scripted
players whose results follow exactly from the rules."""

from __future__ import annotations

import asyncio
import random

import pandas as pd
import pytest

from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.commons.commons import Commons
from agorabench.games.commons.config import CommonsConfig
from agorabench.games.commons.rules import allocate_proportional
from agorabench.games.commons.report import LABELS, metrics_table
from agorabench.games.commons.strategies import CommonsStrategy, STRATEGIES


class Fixed(CommonsStrategy):
    """Asks for the same amount every month (``None``: everything there is)."""

    def __init__(self, amount: int | None) -> None:
        self.amount = amount

    def harvest(self, obs):
        return obs["stock"] if self.amount is None else self.amount


def play(players: dict, seed: int = 1, **cfg):
    """Play one game; ``players`` maps roles (``"*"`` = every other role) to strategy names or
    players."""
    config = CommonsConfig(**cfg)
    seated = {}
    for r in Commons.roles(config):
        p = players.get(r, players.get("*"))
        seated[r] = STRATEGIES[p]() if isinstance(p, str) else p
    table = Table(seated, seed=seed)
    game = Commons(config, Prompts(Commons.prompt_dir))
    outcome = asyncio.run(game.play(table))
    return outcome, game.metrics(outcome), table


def user_text(table: Table, role: str) -> str:
    return "\n".join(m["content"] for m in table.transcripts[role] if m["role"] == "user")


# --- information and month order -------------------------------------------------------------


def test_default_system_prompt_carries_the_originals_content_and_no_horizon_or_threshold():
    _, _, table = play({"*": "sustainable"}, months=1)
    system = table.transcripts["agent_0"][0]["content"]
    assert table.transcripts["agent_0"][0]["role"] == "system"
    assert "$1,000" in system and "over many months" in system  # money per unit, no horizon
    assert "90 tons" in system and "60 tons" in system  # the worked example of the dynamics
    assert "12" not in system and "fewer than" not in system.lower() and " 5 tons" not in system
    first_harvest = table.turns[0].messages[-1]["content"]
    assert "Date: 2024-01-01" in first_harvest and "12" not in first_harvest.replace("2024-01-01", "")
    _, _, table = play({"*": "sustainable"}, months=1, memory="transcript")
    first_harvest = table.turns[0].messages[-1]["content"]
    assert "Month 1 begins." in first_harvest and "of 12" not in first_harvest


def test_scripted_transcript_follows_the_original_month_order():
    # four sustainable fishers and a free-rider, who takes everything in month 2: collapse
    # (the transcript variant shows the order in one transcript; tests/games/commons/
    # test_commons_memory_game.py checks the memory stream's dates)
    outcome, m, table = play({"*": "sustainable", "agent_4": "free-rider"}, memory="transcript")
    assert outcome["collapsed"] and outcome["months_played"] == 2 and m["survival_time"] == 2
    for record in outcome["months"]:
        # the manager's report is the first conversation step and lists catches only
        (report,) = record["report"]
        assert report["speaker"] == "manager"
        for amount in record["collected"].values():
            assert f"caught {amount} tons" in report["message"]
        assert "left in the lake" not in report["message"] and len(report["message"].splitlines()) == 1 + 5
        # the same agent opens every chat, and the chat happens in the collapse month too
        assert record["discussion"] and record["discussion"][0]["speaker"] == "agent_0"
        # K = 10 steps in all, the report being the first
        assert len(record["report"]) + len(record["discussion"]) <= 10
    assert outcome["months"][1]["collapsed"] and outcome["months"][1]["discussion"]
    # limit extraction every month, the collapse month included, told to every agent
    assert [t.phase for t in table.turns].count("summary") == 2
    assert outcome["months"][0]["agreed_limit"] == 10
    text = user_text(table, "agent_2")
    # harvest -> private outcome -> chat opened by the report -> limit -> next month
    steps = [
        "Month 1 begins.",
        "You asked to catch 10 tons of fish and caught 10 tons.",
        "The fishers meet in town",
        "Mayor:\n> Good evening",
        "agreed to catch at most 10 tons",
        "Month 2 begins.",
        f"You asked to catch 10 tons of fish and caught {outcome['months'][1]['collected']['agent_2']} tons.",
        "Mayor:\n> Good evening",
        "the lake is fished out",
    ]
    at = 0
    for step in steps:  # each step appears after the one before it
        at = text.index(step, at) + 1
    assert text.count("You asked") == 2  # one private outcome a month
    assert "You asked to catch 100" in user_text(table, "agent_4") and "You asked to catch 100" not in text  # private


def test_chat_also_follows_the_last_month():
    outcome, m, table = play({"*": "sustainable"}, months=2, max_conversation_steps=3)
    assert m["survived"] == 1
    for record in outcome["months"]:
        assert len(record["report"]) == 1 and len(record["discussion"]) == 2  # report + 2 = K = 3
    assert sum(1 for t in table.turns if t.phase == "discuss") == 4


@pytest.mark.parametrize("order,expected", [("fixed", [0, 0, 0]), ("rotating", [0, 1, 2])])
def test_first_speaker_order(order, expected):
    outcome, _, _ = play({"*": "sustainable"}, months=3, first_speaker=order)
    assert [int(r["discussion"][0]["speaker"][-1]) for r in outcome["months"]] == expected


@pytest.mark.parametrize("scenario", ["fishery", "pasture", "pollution", "trash"])
@pytest.mark.parametrize("language", ["en", "ja"])
def test_chat_turn_asks_only_what_the_original_asks(scenario, language):
    # The original's speaker gives a remark, whether it closes the chat and the next speaker; it is
    # never asked for a numeric limit (the framework model reads one from the minutes). Asking for
    # "proposed_limit" is the legacy protocol's, in the prompt and in the constrained schema.
    from agorabench.games.commons.actions import Remark, Utterance

    config = CommonsConfig(scenario=scenario, language=language)
    assert not config.ask_proposal and CommonsConfig(protocol="legacy").ask_proposal
    outcome, _, table = play({"*": "sustainable"}, months=1, scenario=scenario, language=language)
    turns = [t for t in table.turns if t.phase == "discuss"]
    assert turns and all("proposed_limit" not in t.messages[-1]["content"] for t in turns)
    assert "proposed_limit" not in Remark.json_schema()["properties"]
    assert "proposed_limit" not in Remark.grammar()
    # scripted players still carry their proposal, so the scripted manager reads a limit
    assert outcome["months"][0]["agreed_limit"] == 10
    _, _, table = play({"*": "sustainable"}, months=2, scenario=scenario, language=language, protocol="legacy")
    turns = [t for t in table.turns if t.phase == "discuss"]
    assert turns and all("proposed_limit" in t.messages[-1]["content"] for t in turns)
    assert issubclass(Utterance, Remark) and "proposed_limit" in Utterance.grammar()


def test_legacy_protocol_keeps_the_earlier_game():
    outcome, m, table = play({"*": "sustainable", "agent_4": "free-rider"}, protocol="legacy")
    assert Commons.roles(CommonsConfig(protocol="legacy"))[-1] == "agent_4"  # no limit extraction
    system = table.transcripts["agent_0"][0]["content"]
    assert "fewer than 5 tons" in system.lower()
    assert "Month 1 of 12 begins." in user_text(table, "agent_0")
    assert "tons are left in the lake" in user_text(table, "agent_0")  # the report shows the stock
    assert "You asked" not in user_text(table, "agent_0")
    assert outcome["months"][1]["collapsed"] and outcome["months"][1]["discussion"] == []  # no chat after collapse
    # a field set explicitly wins over the preset
    assert CommonsConfig(protocol="legacy", summariser=True).summariser


def test_individual_report_and_no_report():
    outcome, _, table = play({"*": "sustainable"}, months=1, report="individual", max_conversation_steps=6)
    steps = outcome["months"][0]["report"]
    assert [s["speaker"] for s in steps] == [f"agent_{i}" for i in range(5)]
    assert "Kate:\n> This month I caught 10 tons of fish!" in user_text(table, "agent_0")
    assert len(outcome["months"][0]["discussion"]) == 1  # 5 report lines + 1 remark = K = 6
    outcome, _, table = play({"*": "sustainable"}, months=1, report="none")
    assert outcome["months"][0]["report"] == [] and "Mayor" not in user_text(table, "agent_0")


def test_no_communication_ablation():
    outcome, m, table = play({"*": "sustainable"}, months=3, communication=False, memory="transcript")
    assert "manager" not in table.players and m["survived"] == 1
    assert {t.phase for t in table.turns} == {"harvest"}
    system = table.transcripts["agent_0"][0]["content"]
    assert "talk" not in system and "$1,000" in system
    text = user_text(table, "agent_0")
    assert "Mayor" not in text and "Kate" not in text and "You asked to catch 10 tons" in text


def test_system_prompt_paraphrases_are_data():
    systems = set()
    for variant in ("default", "paraphrase_1", "paraphrase_2", "paraphrase_3"):
        _, _, table = play({"*": "sustainable"}, months=1, system_prompt=variant)
        text = table.transcripts["agent_1"][0]["content"]
        assert "Kate" in text and "$1,000" in text and "12" not in text
        systems.add(text)
    assert len(systems) == 4
    with pytest.raises(ValueError, match="no system prompt 'paraphrase_1'"):
        CommonsConfig(language="ja", system_prompt="paraphrase_1")


def test_greedy_newcomer_joins_in_month_four():
    players = {"*": "sustainable", "agent_4": Fixed(None)}
    outcome, m, table = play(players, n_agents=5, months=15, newcomer_month=4)
    first = outcome["months"][0]
    assert set(first["collected"]) == {f"agent_{i}" for i in range(4)}
    assert first["collected"]["agent_0"] == 12  # floor(50 / 4 present agents)
    assert not [t for t in table.turns if t.role == "agent_4" and t.metrics.get("month", 99) < 4]
    assert "agent_4" in outcome["months"][3]["collected"]
    assert outcome["collapsed"] and m["survival_time"] == 4
    assert "all you want is money" in table.transcripts["agent_4"][0]["content"]
    assert "learned to fish from your family" in table.transcripts["agent_0"][0]["content"]
    with pytest.raises(ValueError, match="after the last month"):
        CommonsConfig(months=3, newcomer_month=5)


def test_sequential_harvest_in_random_order():
    players = {"*": "sustainable", "agent_2": Fixed(None)}
    orders = set()
    for seed in range(6):
        outcome, _, table = play(players, seed=seed, months=1, harvest_order="sequential", max_conversation_steps=0)
        asked = [t.role for t in table.turns if t.phase == "harvest"]
        orders.add(tuple(asked))
        got = outcome["months"][0]["collected"]
        # the greedy agent takes what is left when its turn comes; later agents see less
        before_greedy = asked[: asked.index("agent_2")]
        assert got["agent_2"] == 100 - 10 * len(before_greedy)
        assert sum(got.values()) == 100 and all(got[r] == 10 for r in before_greedy)
    assert len(orders) > 1


def test_proportional_allocation():
    rng = random.Random(0)
    assert allocate_proportional({"a": 100, "b": 50, "c": 50}, 100, rng) == {"a": 50, "b": 25, "c": 25}
    assert allocate_proportional({"a": 10, "b": 20}, 100, rng) == {"a": 10, "b": 20}
    for seed in range(10):
        got = allocate_proportional({"a": 100, "b": 100, "c": 100}, 100, random.Random(seed))
        assert sum(got.values()) == 100 and sorted(got.values()) == [33, 33, 34]
    outcome, _, _ = play({"*": Fixed(None)}, months=1, allocation="proportional")
    assert outcome["months"][0]["collected"] == {f"agent_{i}": 20 for i in range(5)}


# --- trash (inverse) ------------------------------------------------------------------------


def test_trash_clearing_everything_survives_with_no_loss():
    outcome, m, _ = play({"*": Fixed(None)}, scenario="trash")
    assert not outcome["collapsed"] and m["survived"] == 1 and m["survival_time"] == 12
    assert m["total_gain_sum"] == 650  # 100 + 11·50
    assert m["total_loss"] == 0
    assert round(m["efficiency"], 1) == 92.3 and m["efficiency"] == pytest.approx(100 * 600 / 650)


def test_trash_removing_nothing_collapses_in_month_one():
    outcome, m, table = play({"*": "greedy"}, scenario="trash")
    assert outcome["collapsed"] and outcome["months_played"] == 1 and m["survival_time"] == 1
    assert m["total_loss"] == 130 and m["efficiency"] == 0 and m["over_usage"] == 100
    assert m["survival_time_harvested"] == 0  # Table 5's 0.0 for Qwen2.5-0.5B
    assert outcome["months"][0]["discussion"]  # the chat still happens in the collapse month


def test_trash_one_unit_each_survives_the_logged_rule_not_the_strict_one():
    outcome, m, _ = play({"*": Fixed(1)}, scenario="trash")
    assert m["survived"] == 1 and [r["stock_after"] for r in outcome["months"]] == [95] * 12
    assert m["total_loss"] == 130 - 12 and m["efficiency"] == pytest.approx(100 * 60 / 600)
    outcome, m, _ = play({"*": Fixed(1)}, scenario="trash", collapse_threshold=45)
    assert outcome["collapsed"] and m["survival_time"] == 1 and m["survived"] == 0


# --- censored runs in reports ---------------------------------------------------------------


def test_report_leaves_censored_runs_out_of_the_survival_rate():
    games = pd.DataFrame(
        [
            {"game_id": "a", "model_agent_0": "m", "scenario": "fishery", "language": "en", "survived": 1.0, "censored": 0.0, "survival_time": 12.0, "survival_time_harvested": 12.0},
            {"game_id": "b", "model_agent_0": "m", "scenario": "fishery", "language": "en", "survived": None, "censored": 1.0, "survival_time": 3.0, "survival_time_harvested": 3.0},
        ]
    )
    from agorabench.games.commons.report import _prepare

    (row,) = metrics_table(_prepare(games)).to_dict("records")
    assert row["censored"] == 1 and row["runs"] == 2
    assert row[LABELS["survival_rate"]] == "100.00"  # the cut-off run is not a failure
    assert row[LABELS["survival_time"]].startswith("7.50")
    assert "Tables 1–2" in LABELS["survival_time_harvested"]


@pytest.mark.parametrize("protocol", ["original", "legacy"])
def test_pasture_counts_flocks_everywhere(protocol):
    # The original's unit is a flock of sheep, one hectare of grass each; the prompts must not
    # switch between flocks and single sheep (one sheep = one hectare would be a different game).
    import re

    for language, single in (("en", re.compile(r"(?<!of )\bsheep\b")), ("ja", re.compile("頭"))):
        _, _, table = play({"*": "sustainable"}, months=2, scenario="pasture", language=language, protocol=protocol)
        for role in ("agent_0", "manager"):
            text = "\n".join(m["content"] for m in table.transcripts.get(role, []) if m["role"] != "assistant")
            assert not single.findall(text), (language, role, single.findall(text))
        assert ("flock" if language == "en" else "群れ") in table.transcripts["agent_0"][0]["content"]


@pytest.mark.parametrize("language", ["en", "ja"])
def test_chat_length_is_not_told_by_default(language):
    # The original never tells the agents how many conversation steps a chat allows (a known end
    # of the chat, like a known horizon, invites last-word tactics); the legacy protocol does.
    told_here = {"en": "up to 7 remarks", "ja": "最大7回"}[language]
    for protocol, told in (("original", False), ("legacy", True)):
        _, _, table = play({"*": "sustainable"}, months=2, language=language, protocol=protocol, max_conversation_steps=7)
        text = user_text(table, "agent_0")
        assert "Mayor" in text or "町長" in text  # a chat took place
        assert (told_here in text) is told
        assert ("remarks in total" in text or "回までです" in text) is told


# --- memory: what each prompt shows of earlier months (commons-4) ----------------------------


class Reasoning(CommonsStrategy):
    """A sustainable player that writes reasoning before each number, as an LLM would."""

    async def act(self, request):
        reply = await STRATEGIES["sustainable"]().act(request)
        if request.prompt.phase == "discuss":
            return reply
        return type(reply)(text=f"Let me think about month {request.prompt.observation['month']}.\n{reply.text}", action=reply.action, cached=True)


def shown_text(turn) -> str:
    return "\n".join(m["content"] for m in turn.messages if m["role"] != "system")


def test_agents_are_shown_the_current_month_and_the_three_before():
    # The original's memories of a month's chat expire 63 days later, so a harvest can recall at
    # most the three months before it; by default a prompt shows the agent's system message and
    # its transcript from the start of month t - 3 on. The transcript itself stays whole.
    _, _, table = play({"*": "sustainable"}, months=8, memory="transcript")
    harvests = {t.metrics["month"]: t for t in table.turns if t.role == "agent_1" and t.phase == "harvest"}
    for month, turn in harvests.items():
        first = max(1, month - 3)
        assert turn.messages[0]["role"] == "system" and turn.messages[1]["content"].startswith(f"Month {first} begins.")
        text = shown_text(turn)
        assert all((f"Month {k} begins." in text) is (first <= k <= month) for k in range(1, 9))
    assert "Month 1 begins." in user_text(table, "agent_1")
    # within a month a prompt extends the one before (a prefix cache reuses it)
    own = [t for t in table.turns if t.role == "agent_0"]
    j = next(i for i, t in enumerate(own) if t.metrics.get("month") == 6)
    harvest, remark = own[j], own[j + 1]  # month 6: the harvest, then the first remark
    assert remark.phase == "discuss" and remark.messages[: len(harvest.messages)] == harvest.messages
    # memory_months = None (the legacy protocol's) shows the whole game
    for cfg in ({"memory_months": None}, {"protocol": "legacy"}):
        _, _, table = play({"*": "sustainable"}, months=8, **{"memory": "transcript", **cfg})
        last = [t for t in table.turns if t.role == "agent_1" and t.phase == "harvest"][-1]
        assert shown_text(last).startswith("Month 1 ") and "Month 8 " in shown_text(last)


def test_limit_extractor_reads_only_this_months_minutes():
    # The original's framework model is given the month's conversation and nothing else.
    _, _, table = play({"*": "sustainable"}, months=3)  # either memory
    summaries = [t for t in table.turns if t.phase == "summary"]
    assert len(summaries) == 3
    for month, turn in enumerate(summaries, 1):
        assert len(turn.messages) == 1 and turn.messages[0]["role"] == "user"
        assert f"meeting in month {month}:" in turn.messages[0]["content"]
    _, _, table = play({"*": "sustainable"}, months=3, summariser_memory="all", memory="transcript")
    last = [t for t in table.turns if t.phase == "summary"][-1]
    assert "meeting in month 1:" in shown_text(last) and "meeting in month 3:" in shown_text(last)


def test_earlier_decisions_are_shown_condensed():
    # The original keeps no reasoning in memory: later months show an agent's earlier answers as
    # "Answer: N" only, and earlier prompts without their instructions; within a month the
    # transcript grows as it is written. earlier_decisions = "verbatim" (legacy) shows all as written.
    _, _, table = play({"*": Reasoning()}, months=3, memory="transcript")
    turns = [t for t in table.turns if t.role == "agent_2"]
    first_remark = next(t for t in turns if t.phase == "discuss")
    assert "Let me think about month 1." in shown_text(first_remark)
    last_harvest = [t for t in turns if t.phase == "harvest"][-1]
    assert "Let me think" not in shown_text(last_harvest) and shown_text(last_harvest).count("Answer: 10") == 2
    # earlier prompts are shown without their instructions (each decision repeats its own)
    assert shown_text(last_harvest).count("Answer: N") == 1 and shown_text(last_harvest).count("Month") == 3
    assert "Let me think about month 1." in "\n".join(m["content"] for m in table.transcripts["agent_2"])  # kept whole
    _, _, table = play({"*": Reasoning()}, months=3, earlier_decisions="verbatim", memory="transcript")
    last_harvest = [t for t in table.turns if t.role == "agent_2" and t.phase == "harvest"][-1]
    assert "Let me think about month 1." in shown_text(last_harvest) and "Let me think about month 2." in shown_text(last_harvest)
    assert shown_text(last_harvest).count("Answer: N") == 3


def test_table_marks_inside_a_merged_message_and_keeps_the_transcript_whole():
    table = Table({"a": STRATEGIES["sustainable"]()}, seed=1, system={"a": "rules"})
    table.tell("a", "old news")
    mark = table.mark("a")
    table.tell("a", "new news")  # merged into the same user message
    assert len(table.transcripts["a"]) == 2
    table.forget_before("a", mark)
    assert table.shown("a") == [{"role": "system", "content": "rules"}, {"role": "user", "content": "new news"}]
    assert table.transcripts["a"][1]["content"] == "old news\n\nnew news"
