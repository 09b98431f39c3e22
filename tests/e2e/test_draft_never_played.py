"""A draft is never played, and an answer is never lost to its shape (issue 40, items 6 and 7),
through whole studies: ``agora run`` against the loopback server of
``tests/support/shaped_replies.py``, whose models answer with the final answer and a draft in
one reply (an answer followed by a second ``<think>`` block, an answer holding a literal
``</think>``, an answer followed by a fenced rejected draft, a quoted draft before the answer).

For every turn of those models: the move is the final answer (valid at once, never asked
again), the draft reaches no prompt of any other seat (GLEE's message is relayed to the other
player; envy's choice to its peer), and a person reading the answer back (the participant
page's text, :func:`agorabench.web.forms.answer_text`) reads the answer's values, not the
draft's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agorabench.store.store import Store
from agorabench.web.forms import answer_text
from support.helpers import agora, serving
from support.providers import _DRAFT_TEXTS, REJECTION, draft_answer, final_answer, plain_messages
from support.shaped_replies import SHAPES
from support.studies import envy_points, model, paper_grid, scripted, study_toml

SERVER = Path(__file__).resolve().parents[1] / "support" / "shaped_replies.py"
#: Shapes whose draft is in a thought (so in nobody's prompt at all, the model's own included).
IN_THOUGHTS = {"second-think", "stray-close"}


@pytest.fixture(scope="module")
def url():
    with serving(SERVER) as base:
        yield base


def entries(url: str) -> list[dict[str, Any]]:
    return [model(shape, f"vllm/{shape}@{url}", temperature=0) for shape in SHAPES]


def play(capsys, tmp_path: Path, text: str, name: str) -> list[dict[str, Any]]:
    """Run the study ``text``; its turns, each with its game's seats as ``seats``."""
    path, db = tmp_path / f"{name}.toml", tmp_path / f"{name}.db"
    path.write_text(text, encoding="utf-8")
    rc, _, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "4")
    assert rc == 0, err
    store = Store(db)
    try:
        games, turns = store.games(name), store.turns(name)
    finally:
        store.dispose()
    assert games and all(g["status"] == "done" for g in games), [g["status"] for g in games]
    seats = {g["id"]: g["seats"] for g in games}
    for t in turns:
        t["seats"] = seats[t["game_id"]]
    return turns


def values(answer: str) -> dict[str, Any]:
    """The fields of one of the servers' answers (a JSON object or a ``<response>`` block)."""
    answer = answer.strip()
    if answer.startswith("{"):
        return json.loads(answer)
    block = re.search(r"<response>(.*?)</response>", answer, re.S)
    assert block, answer
    return {k: v.strip() for k, v in re.findall(r"<(\w+)>(.*?)</\1>", block.group(1), re.S)}


def same(stored: Any, written: Any) -> bool:
    """Whether a stored action's value is the value an answer wrote (70.0 is 70)."""
    try:
        return float(stored) == float(written)
    except (TypeError, ValueError):
        return str(stored) == str(written)


def text_of(messages: list[dict[str, Any]]) -> str:
    """The text of a conversation's messages, one after the other."""
    return "\n".join(m["content"] for m in plain_messages(messages))


def check(turns: list[dict[str, Any]]) -> int:
    """The checks of the module doc over ``turns``; returns how many shaped turns there were."""
    shaped = [t for t in turns if t["seats"][t["role"]] in SHAPES and t["raw"] is not None]
    for t in shaped:
        shape, where = t["seats"][t["role"]], (t["seats"][t["role"]], t["game_id"][:8], t["idx"], t["role"])
        final, draft = final_answer(t["messages"]), draft_answer(t["messages"])
        assert t["valid"] and t["retries"] == 0 and t["error"] is None, (where, t["error"], t["raw"])
        chosen, rejected = values(final), values(draft)
        assert all(same(t["action"][k], v) for k, v in chosen.items()), (where, t["action"], chosen)
        assert not all(same(t["action"][k], v) for k, v in rejected.items()), (where, t["action"], rejected)
        if shape in IN_THOUGHTS:
            assert draft not in t["raw"] and draft in t["reasoning"], where
        if shape == "second-think":
            assert t["raw"] == final, where
        if shape == "stray-close":
            assert t["raw"].startswith(final) and "</think>" in t["raw"], where
        # the person's reading of the answer: the answer's values, no word of the draft
        shown = answer_text(t["raw"])
        assert not [w for w in (*_DRAFT_TEXTS, REJECTION) if w in shown], (where, shown)
        for k, v in chosen.items():
            if isinstance(v, str) and len(v) > 12:
                assert v in shown, (where, k, shown)
        # no other seat's prompt holds the draft (nor the model's own, where it was a thought)
        # (a short draft such as {"decision": "accept"} is also what the instructions show)
        marks = [w for w in _DRAFT_TEXTS if w in draft]
        for u in turns:
            if u["game_id"] == t["game_id"] and (u["role"] != t["role"] or shape in IN_THOUGHTS):
                # what the game told that seat (its own replies may quote its own drafts)
                prompt = text_of(u["messages"] if shape in IN_THOUGHTS else [m for m in u["messages"] if m["role"] != "assistant"])
                assert not (marks and draft in prompt) and not [w for w in marks if w in prompt], (where, u["role"], u["idx"])
    return len(shaped)


def test_glee_bargaining_plays_the_answer_of_every_shape_and_relays_no_draft(url, capsys, tmp_path):
    """Each shaped model bargains against itself with messages: the offer's message is what the
    other player reads, so a played draft would put the draft's words in its prompt."""
    text = study_toml(
        "shapes_bargain", "glee.bargaining", matchups="same_model", repeats=1, seed=3,
        grid={"delta_a": [0.8, 0.95]}, fixed={"horizon": 2, "money": 100, "messages": True, "delta_b": 0.9}, models=entries(url),
    )
    turns = play(capsys, tmp_path, text, "shapes_bargain")
    assert check(turns) >= 2 * 2 * len(SHAPES)
    for shape in SHAPES:  # every shape played, in both seats
        assert {t["role"] for t in turns if t["seats"][t["role"]] == shape} == {"alice", "bob"}, shape


def test_envy_points_plays_the_answer_of_every_shape_in_xml(url, capsys, tmp_path):
    """The XML format (envy's choice with its reason): the same shapes, against a self-maximiser."""
    grid = paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=["A"])
    text = envy_points("shapes_envy", [*entries(url), scripted("self-max")], seed=3, repeats=1, grid=grid)
    turns = play(capsys, tmp_path, text, "shapes_envy")
    assert check(turns) >= len(SHAPES)
