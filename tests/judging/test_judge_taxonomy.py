"""Taxonomies as data, the judge's request and the reading of its answer."""

from __future__ import annotations

import json

import pytest

from agorabench.core.actions import ParseError
from agorabench.core.errors import StudyError
from agorabench.judging.prompt import PROMPT_VERSION, label_type, labels_of, request
from agorabench.judging.taxonomy import EXAMPLES, load_taxonomy, taxonomy_of


def test_shipped_taxonomies_load():
    coop, svo = load_taxonomy("cooperation"), load_taxonomy("leader_svo")
    assert coop.multi_label and coop.none_label == "other" and len(coop.categories) == 15
    assert not svo.multi_label and set(svo.names) == {"none", "altruistic", "prosocial", "individualistic", "competitive"}
    assert set(EXAMPLES) == {"cooperation", "leader_svo"} and len(PROMPT_VERSION) == 64


def test_json_and_table_forms_and_errors(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"categories": {"Kind": "Says something kind.", "Rude": "Says something rude."}}))
    t = load_taxonomy(f)
    assert t.name == "t" and t.names == ("Kind", "Rude") and not t.multi_label
    edited = taxonomy_of({"categories": {"Kind": "Says something nice.", "Rude": "Says something rude."}}, "t")
    assert edited.digest != t.digest  # an edited definition codes again
    for data, words in (
        ({"categories": [{"name": "a", "definition": "x"}, {"name": "A", "definition": "y"}]}, "named twice"),
        ({"categories": [{"name": "a"}, {"name": "b", "definition": "y"}]}, "needs a non-empty"),
        ({"categories": {"a": "x", "b": "y"}, "none_label": "other"}, "multi-label"),
        ({"categories": {"a": "x", "b": "y"}, "labels": 2}, "unknown setting 'labels'"),
    ):
        with pytest.raises(StudyError, match=words):
            taxonomy_of(data)
    (tmp_path / "bad.toml").write_text("categories = [")
    with pytest.raises(StudyError, match="not valid TOML"):
        load_taxonomy(tmp_path / "bad.toml")


def test_single_label_answers():
    kind = label_type(load_taxonomy("leader_svo"))
    assert labels_of(kind.parse('{"label": "Prosocial"}')) == ["prosocial"]
    # a reasoning draft never counts: only the final answer after the thoughts
    assert labels_of(kind.parse('<think>{"label": "competitive"}</think>\n{"label": "altruistic"}')) == ["altruistic"]
    with pytest.raises(ParseError, match="not a category"):
        kind.parse('{"label": "selfish"}')
    with pytest.raises(ParseError):
        kind.parse("The speaker is prosocial.")
    with pytest.raises(ParseError, match="unclosed"):
        kind.parse('<think>{"label": "none"}')


def test_multi_label_answers():
    kind = label_type(load_taxonomy("cooperation"))
    assert labels_of(kind.parse('{"labels": ["payoff", "Caution", "payoff"]}')) == ["payoff", "caution"]
    assert labels_of(kind.parse('{"labels": "payoff, fairness"}')) == ["payoff", "fairness"]
    assert labels_of(kind.parse('{"labels": ["other"]}')) == ["other"]
    with pytest.raises(ParseError, match="give it alone"):
        kind.parse('{"labels": ["other", "payoff"]}')
    with pytest.raises(ParseError, match="no category"):
        kind.parse('{"labels": []}')


def test_request_is_stable_and_quotes_the_message():
    t = load_taxonomy("cooperation")
    one, two = request(t, "chat", "Let us share.\nFairly."), request(t, "chat", "Let us share.\nFairly.")
    assert one == two and [m["role"] for m in one] == ["system", "user"]
    assert "> Let us share.\n> Fairly." in one[1]["content"] and "free_riding:" in one[0]["content"] and "- other:" in one[0]["content"]
    assert "Kind of message: chat" in one[1]["content"]


def test_family_readers_find_messages():
    from agorabench.families import message_reader

    commons, glee = message_reader("commons"), message_reader("glee.negotiation")
    assert commons({"phase": "discuss", "action": {"message": " Hello ", "next_speaker": "B"}}) == [("chat", "Hello")]
    assert commons({"phase": "agenda", "action": {"agenda": "Share evenly."}}) == [("agenda", "Share evenly.")]
    assert commons({"phase": "harvest", "action": {"amount": 3}}) == [] and commons({"phase": "discuss", "action": None}) == []
    assert glee({"phase": "offer", "action": {"price": 5, "message": "A fair price."}}) == [("offer_message", "A fair price.")]
    assert glee({"phase": "offer", "action": {"price": 5, "message": ""}}) == []
    assert message_reader("ultimatum") is None
