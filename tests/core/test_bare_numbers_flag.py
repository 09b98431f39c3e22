"""Action.bare_numbers (issue 44 item 5): the JSON format line writes number placeholders bare
when a type opts in; off, the line is byte for byte what it always was."""

from __future__ import annotations

import json
from typing import ClassVar, Literal, Optional

from pydantic import Field

from agorabench.core.actions import Action


class Send(Action):
    response_format: ClassVar = "json"

    send: int = Field(ge=0, le=10, description="a whole number of points from 0 to 10")
    share: Optional[float] = Field(None, description="a share from 0 to 1")
    decision: Literal["accept", "reject"] = Field(description="accept or reject")
    message: str = Field("", description="your message")


class BareSend(Send):
    bare_numbers: ClassVar = True


class XmlSend(Send):
    response_format: ClassVar = "xml"
    bare_numbers: ClassVar = True


def test_default_stays_the_quoted_line_of_before():
    example = {"send": "a whole number of points from 0 to 10", "share": "a share from 0 to 1", "decision": "accept or reject", "message": "your message"}
    assert Send.format_instructions() == "Answer with a JSON object of this form:\n" + json.dumps(example)


def test_flag_writes_numbers_bare_and_the_rest_quoted():
    assert BareSend.format_instructions() == (
        "Answer with a JSON object of this form:\n"
        '{"send": <a whole number of points from 0 to 10>, "share": <a share from 0 to 1>, '
        '"decision": "accept or reject", "message": "your message"}'
    )
    # the answer a model writes from that line parses as before
    assert BareSend.parse('{"send": 4, "share": 0.5, "decision": "accept", "message": "hi"}').send == 4


def test_flag_leaves_formats_without_quotes_alone():
    class PlainXml(Send):
        response_format: ClassVar = "xml"

    assert XmlSend.format_instructions() == PlainXml.format_instructions()
    assert "<send>a whole number of points from 0 to 10</send>" in XmlSend.format_instructions()
