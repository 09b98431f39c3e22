"""What a person reads (issue 20, item 5): every registered game's instructions and questions
without the answer format meant for models, found by the marks its templates set (no guessing
from the text); a template without the mark falls back to the action's own format text."""

from __future__ import annotations

import asyncio

import pytest

from agorabench import families
from agorabench.conformance import RandomPlayer, config_of
from agorabench.core.game import Prompts
from agorabench.core.table import FORMAT, GAME, RULES, Part, Table
from agorabench.web.play import for_person

MODEL_SYNTAX = ("JSON", "XML", '{"', "<response>", "Answer:", "Answer with", "Reply in the")


class Keep:
    """A random player that keeps what each request showed, as parts."""

    def __init__(self) -> None:
        self.seen: list = []

    async def act(self, request):
        # the messages after the system message (the rules, checked above), as parts
        shown = [p for p, m in zip(request.parts, request.messages) if m["role"] != "system"]
        self.seen.append((shown, request.action_type.format_instructions()))
        return await RandomPlayer().act(request)


@pytest.mark.parametrize("game", families.game_names())
def test_a_person_reads_no_answer_format_in_any_game(game):
    cls = families.load_game(game)
    config = config_of(game)
    told = asyncio.run(cls(config, Prompts(cls.prompt_dir), {}).instructions(seed=1))
    for role, rules in told.rules.items():
        assert rules and not any(s in rules for s in MODEL_SYNTAX), (role, rules)
    players = {r: Keep() for r in cls.active_roles(config)}
    asyncio.run(cls(config, Prompts(cls.prompt_dir), {}).play(Table(players, seed=2, max_retries=0)))
    asked = 0
    for player in players.values():
        for parts, fmt in player.seen:
            for message in parts:
                if message and message[0].kind != "answer":
                    text = for_person(message, {fmt})
                    assert not any(s in text for s in MODEL_SYNTAX), text
                    asked += 1
    assert asked > 0


def test_without_a_mark_the_format_text_itself_is_left_out():
    fmt = 'Answer with a JSON object: {"x": 1}'
    assert for_person((Part(GAME, f"Pick x.\n{fmt}"),), {fmt}) == "Pick x."
    assert for_person((Part(RULES, "Rules.\n"), Part(FORMAT, "Anything the template marked.")), {fmt}) == "Rules."
