"""The table's small API that keeps games out of its internals (issue 20, item 6): a public
announcement to several roles, whether a role's last answer was valid, and a fresh transcript
for a player who remembers nothing, with earlier turns keeping the prompts they were shown."""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal

from agorabench.core.actions import Action
from agorabench.core.table import Prompt, Reply, Table


class YesNo(Action):
    response_format: ClassVar = "json"
    decision: Literal["yes", "no"]


class Answers:
    """Answers from a fixed list, in order."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)

    async def act(self, request) -> Reply:
        return Reply(text=self.texts.pop(0))


def test_tell_all_and_last_valid():
    table = Table({"a": Answers('{"decision": "yes"}'), "b": Answers("maybe", "maybe")}, seed=1, max_retries=1)
    table.tell_all(["a", "b"], "The market opens.")
    assert all("The market opens." in table.transcripts[r][-1]["content"] for r in ("a", "b"))
    assert table.last_valid("a") is False  # no decision yet
    asyncio.run(table.ask("a", Prompt("Buy?"), YesNo))
    assert table.last_valid("a") is True
    answer = asyncio.run(table.ask("b", Prompt("Buy?"), YesNo, fallback=YesNo(decision="no")))
    assert answer == YesNo(decision="no") and table.last_valid("b") is False and table.last_valid("a") is True


def test_restart_gives_a_fresh_transcript_and_keeps_earlier_prompts():
    table = Table({"b": Answers('{"decision": "yes"}', '{"decision": "no"}')}, seed=1, system={"b": "Round 1 rules."})
    asyncio.run(table.ask("b", Prompt("Round 1: buy?"), YesNo))
    table.restart("b", "Round 2 rules.")
    assert table.transcripts["b"] == [{"role": "system", "content": "Round 2 rules."}]
    asyncio.run(table.ask("b", Prompt("Round 2: buy?"), YesNo))
    first, second = table.turns
    assert [m["content"] for m in first.messages] == ["Round 1 rules.", "Round 1: buy?"]
    assert [m["content"] for m in second.messages] == ["Round 2 rules.", "Round 2: buy?"]
