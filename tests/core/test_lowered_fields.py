"""Action.lowered_fields (issue 44 item 5): the action base reads choice fields without regard
to case, spaces or a closing "." / "!", for every game that names them."""

from __future__ import annotations

from typing import ClassVar, Literal

import pytest

from agorabench.core.actions import Action, ParseError


class Respond(Action):
    lowered_fields: ClassVar = ("decision",)

    decision: Literal["accept", "reject"]
    note: str = ""


def test_choice_read_whatever_its_case_and_closing_mark():
    for raw in ("Accept", " ACCEPT. ", "accept!"):
        assert Respond.parse('{"decision": "%s"}' % raw).decision == "accept"
    assert Respond(decision="Reject.").decision == "reject"


def test_other_fields_are_left_as_written_and_bad_choices_still_fail():
    assert Respond.parse('{"decision": "reject", "note": " Keep It. "}').note == "Keep It."  # the parser trims, the case and mark stay
    with pytest.raises(ParseError):
        Respond.parse('{"decision": "maybe"}')


def test_games_use_the_base_rule():
    from agorabench.games.glee.common import Decision, YesNo
    from agorabench.games.ultimatum.ultimatum import Response

    assert Decision.parse('{"decision": "Reject."}').decision == "reject"
    assert Response.parse('{"decision": " ACCEPT "}').decision == "accept"
    assert YesNo.parse('{"decision": "Yes!"}').decision == "yes" and YesNo.parse('{"decision": false}').decision == "no"
