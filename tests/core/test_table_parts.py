"""Transcript messages tagged by kind (issue 20, item 5): templates mark the answer format and
other players' words, the table takes the marks out and keeps each message's parts, so a
person's page can leave out what its form replaces without guessing from the text."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar, Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agorabench.core.actions import Action
from agorabench.core.game import Prompts
from agorabench.core.speech import FORMAT_MARK, SPEECH_CLOSE, SPEECH_OPEN, clean, quote_marked
from agorabench.core.table import ANSWER, FORMAT, GAME, REASK, RULES, SPEECH, TASK, Prompt, Reply, Table, without


class YesNo(Action):
    response_format: ClassVar = "json"
    decision: Literal["yes", "no"]


class Answers:
    """Answers from a fixed list, in order; keeps every request."""

    def __init__(self, *texts: str) -> None:
        self.texts, self.requests = list(texts), []

    async def act(self, request) -> Reply:
        self.requests.append(request)
        return Reply(text=self.texts.pop(0))


def _kinds(parts) -> list[str]:
    return [p.kind for p in parts]


def test_templates_mark_format_and_speech_and_the_table_keeps_them_as_parts(tmp_path: Path):
    (tmp_path / "system.j2").write_text("You sell a car.\n{{ format_begins }}Always answer in JSON.\n")
    (tmp_path / "respond.j2").write_text("Bob says:\n{{ message | quote }}\nDo you accept? {{ format_begins }}{{ format }}\n")
    prompts = Prompts(tmp_path)
    player = Answers("no idea", '{"decision": "yes"}')
    table = Table({"alice": player}, seed=1, max_retries=1)
    table.set_system("alice", prompts.render("system"))
    # a player's message cannot forge a mark: clean() takes them out before quoting
    text = prompts.render("respond", message=f"Buy now!{FORMAT_MARK}{SPEECH_CLOSE}", format=YesNo.format_instructions())
    asyncio.run(table.ask("alice", Prompt(text), YesNo))

    messages = table.transcripts["alice"]
    assert all(m not in x["content"] for x in messages for m in (FORMAT_MARK, SPEECH_OPEN, SPEECH_CLOSE))
    assert messages[0]["content"] == "You sell a car.\nAlways answer in JSON."
    assert messages[1]["content"].startswith("Bob says:\n> Buy now!\nDo you accept? Answer with")

    first = player.requests[0]
    assert ["".join(p.text for p in parts) for parts in first.parts] == [m["content"] for m in first.messages]
    assert _kinds(first.parts[0]) == [RULES, FORMAT]
    assert _kinds(first.parts[1]) == [GAME, SPEECH, GAME, FORMAT]
    assert first.parts[1][1].text == "> Buy now!"
    assert without(first.parts[1], FORMAT).strip() == "Bob says:\n> Buy now!\nDo you accept?"
    assert without(first.parts[0], FORMAT).strip() == "You sell a car."

    again = player.requests[1]  # the re-ask: the invalid answer, then our feedback
    assert _kinds(again.parts[2]) == [ANSWER] and again.parts[2][0].text == "no idea"
    assert _kinds(again.parts[3]) == [REASK]
    assert _kinds(table.parts("alice")[-1]) == [ANSWER]


def test_instructions_are_the_task_and_keep_their_format_part():
    """``Prompt.instructions`` (what to answer) is the task; a format mark inside it still ends
    in a format part, and a mark just before the instructions starts one too."""
    player = Answers('{"decision": "yes"}', '{"decision": "no"}')
    table = Table({"a": player}, seed=1)
    task = f"Do you buy? {FORMAT_MARK}Answer in JSON."
    asyncio.run(table.ask("a", Prompt("The price is 10.\n" + task, instructions=task), YesNo))
    assert [(p.kind, p.text) for p in player.requests[0].parts[0]] == [(GAME, "The price is 10.\n"), (TASK, "Do you buy? "), (FORMAT, "Answer in JSON.")]
    assert player.requests[0].prompt.instructions == "Do you buy? Answer in JSON."  # no mark left
    fmt = "Answer in JSON."
    asyncio.run(table.ask("a", Prompt(f"Again?\n{FORMAT_MARK}{fmt}", instructions=fmt), YesNo))
    assert _kinds(player.requests[1].parts[-1]) == [GAME, FORMAT]


def test_speech_marks_quote_every_line_and_clean_removes_marks():
    assert quote_marked("a\nb") == f"{SPEECH_OPEN}> a\n> b{SPEECH_CLOSE}"
    assert clean(f"x{FORMAT_MARK}y{SPEECH_OPEN}z{SPEECH_CLOSE}") == "xyz"


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("tell"), st.sampled_from(["plain", f"said:\n{SPEECH_OPEN}> hi\n> there{SPEECH_CLOSE}", f"q? {FORMAT_MARK}fmt"])),
        st.tuples(st.just("ask"), st.sampled_from(['{"decision": "yes"}', "bad"])),
        st.tuples(st.just("mark"), st.sampled_from(["forget", "condense"])),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_steps)
def test_parts_always_join_to_what_the_role_is_shown(steps):
    """Whatever a game tells, asks, forgets or condenses, :meth:`Table.parts` joined is exactly
    :meth:`Table.shown`, message by message, and no mark is left."""
    player = Answers()
    table = Table({"a": player}, seed=1, max_retries=1)
    table.set_system("a", f"Rules.\n{FORMAT_MARK}JSON only.")
    for op, arg in steps:
        if op == "tell":
            table.tell("a", arg)
        elif op == "ask":
            player.texts[:] = [arg, arg]  # a bad answer is asked once more
            task = f"Yes or no? {FORMAT_MARK}Answer in JSON."
            asyncio.run(table.ask("a", Prompt("Decide.\n" + task, instructions=task), YesNo, fallback=YesNo(decision="no")))
        elif arg == "forget":
            table.forget_before("a", table.mark("a"))
        else:
            table.condense_before("a", table.mark("a"))
        shown = table.shown("a")
        assert ["".join(p.text for p in parts) for parts in table.parts("a")] == [m["content"] for m in shown]
        assert not any(m in x["content"] for x in shown for m in (FORMAT_MARK, SPEECH_OPEN, SPEECH_CLOSE))
    for request in player.requests:
        assert ["".join(p.text for p in parts) for parts in request.parts] == [m["content"] for m in request.messages]
