"""Words meant for people: a person in a seat reads each family's wording for people (never that
they are a language model), chosen by the game from the roles people play, while every model
keeps its prompts byte for byte; the commons harvest a person enters is bounded by the stock the
question states, the next speaker is a choice among the group's names and the meeting ends with a
button; a person's own values reach the bonus rule (``my_catch``), which is told in words and
money."""

from __future__ import annotations

import asyncio
import re

import pytest

from agorabench import families
from agorabench.core.agents import RandomAnswers
from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.commons.actions import Harvest, Remark, person_harvest, person_remark
from agorabench.web.forms import answer_text, form_fields, parse_form
from agorabench.web.settings import bonus_values, evaluate_bonus, explain_bonus

#: Words that tell a person they deal with (or are) a language model.
MACHINE_WORDS = re.compile(r"language models?|\bAI\b|\bLLMs?\b|\bmodels?\b|chatbot", re.IGNORECASE)


def _game(name: str, people=frozenset(), config: dict | None = None):
    cls = families.load_game(name)
    cfg = cls.Config(**(families.examples()[name] if config is None else config))
    roles = cls.roles(cfg)
    names = {r: f"Player {chr(65 + i)}" for i, r in enumerate(roles)}
    return cls(cfg, Prompts(cls.prompt_dir), names, people=people), cfg


@pytest.mark.parametrize("name", families.game_names())
def test_a_person_is_never_told_of_language_models_and_models_keep_their_prompts(name):
    """For every registered game and every role a person may take: the rules that person reads
    name no language model; the rules every other role (a model) reads are byte for byte those
    of a game without people."""
    plain, cfg = _game(name)
    base = asyncio.run(plain.instructions(seed=3))
    for role in type(plain).active_roles(cfg):
        game, _ = _game(name, people={role})
        told = asyncio.run(game.instructions(seed=3))
        found = MACHINE_WORDS.search(told.rules.get(role, ""))
        assert found is None, f"{name}/{role}: {told.rules[role]!r}"
        for other, text in base.system.items():
            if other != role:
                assert told.system[other] == text, (name, role, other)


def _play(name: str, people: set[str], config: dict | None = None):
    """One game with random stand-ins in every active seat; returns the table and the outcome."""
    game, cfg = _game(name, people=frozenset(people), config=config)
    table = Table({r: RandomAnswers() for r in type(game).active_roles(cfg)}, seed=5)
    outcome = asyncio.run(game.play(table))
    return game, table, outcome


@pytest.mark.parametrize("name, role", [("envy.points", "focal"), ("envy.workplace", "subject")])
def test_envy_for_a_person_every_text_they_read(name, role):
    """The whole game as the person reads it: no language model, no answer format; the same
    game for a model keeps the paper's wording ("language model", "AI")."""
    _, table, outcome = _play(name, {role})
    person = "\n".join(m["content"] for m in table.transcripts[role] if m["role"] != "assistant")
    assert MACHINE_WORDS.search(person) is None, person
    assert "XML" not in person and ("other player" in person or "colleague" in person)
    _, model_table, _ = _play(name, set())
    model = "\n".join(m["content"] for m in model_table.transcripts[role])
    assert MACHINE_WORDS.search(model) is not None  # the models' prompts are untouched
    game, _ = _game(name, people={role})
    lines = game.describe(outcome, role)
    assert lines and all(MACHINE_WORDS.search(line) is None and "_" not in line for line in lines), lines


def test_envy_points_results_in_words():
    game, _ = _game("envy.points", people={"focal"})
    lines = game.describe({"final_choice": "C", "choices": ["A", "B", "C"], "points_self": 1, "points_peer": -1, "turns": []}, "focal")
    assert lines == ["You chose option A then B then C over the three questions.", "Your final choice, option C, adds 1 point for you and takes away 1 point for the other player."]


# commons ------------------------------------------------------------------------------------


def test_commons_person_harvest_is_bounded_by_the_stated_stock_and_refused_with_a_message():
    kind = person_harvest(37)
    assert issubclass(kind, Harvest) and kind.format_instructions() == Harvest.format_instructions()
    (field,) = form_fields(kind)
    assert (field.kind, field.minimum, field.maximum) == ("number", 0, 37)
    action, errors = parse_form(kind, {"amount": "99999"})
    assert action is None and errors == ["Amount: 99999 is outside the allowed range; enter a whole number from 0 to 37."]
    assert parse_form(kind, {"amount": "-1"})[0] is None
    assert parse_form(kind, {"amount": "37"})[0].amount == 37
    # a model's harvest is what it always was: no upper bound (the allocation shares the stock)
    assert Harvest.parse("Answer: 99999").amount == 99999


def test_commons_person_remark_names_the_next_speaker_from_a_list_and_ends_with_a_button():
    kind = person_remark(Remark, ("Kate", "Jack"))
    fields = {f.name: f for f in form_fields(kind)}
    assert fields["next_speaker"].kind == "select" and fields["next_speaker"].options == ["Kate", "Jack"]
    assert fields["end_conversation"].kind == "button" and "end the meeting" in fields["end_conversation"].label
    assert parse_form(kind, {"message": "hi", "next_speaker": "Luke"})[1] == ["Who speaks next: choose one of Kate, Jack."]
    said, _ = parse_form(kind, {"message": "hi", "next_speaker": "Jack"})
    assert said.next_speaker == "Jack" and said.end_conversation is False
    ended, _ = parse_form(kind, {"message": "bye", "next_speaker": "Kate", "end_conversation": "true"})
    assert ended.end_conversation is True and isinstance(ended, Remark)
    # read back to the person: no "False" echoed, a closed meeting says so
    assert "False" not in answer_text(said.render()) and "End conversation: yes" in answer_text(ended.render())
    assert answer_text("Answer: 12") == "Your answer: 12"


COMMONS = {"n_agents": 3, "months": 3, "max_conversation_steps": 3, "memory": "transcript"}


def test_commons_person_seat_gets_the_bounded_types_and_models_do_not():
    game, table, outcome = _play("commons", {"agent_0"}, COMMONS)
    harvests = [t for t in table.turns if t.phase == "harvest"]
    assert harvests and all(t.valid for t in harvests if t.role == "agent_0")
    person_msgs = "\n".join(m["content"] for m in table.transcripts["agent_0"] if m["role"] == "user")
    assert MACHINE_WORDS.search(person_msgs) is None
    # what each took, for the bonus: the person's own catch as my_catch
    assert set(outcome["catch"]) == {"agent_0", "agent_1", "agent_2"}
    mine = sum(m["collected"]["agent_0"] for m in outcome["months"])
    values = bonus_values(outcome, game.metrics(outcome), "agent_0")
    assert values["my_catch"] == outcome["catch"]["agent_0"] == mine and values["catch_agent_1"] == outcome["catch"]["agent_1"]
    assert evaluate_bonus("0.02 * my_catch", values, 100.0) == round(0.02 * mine, 2)
    # the results page in words
    lines = game.describe(outcome, "agent_0")
    text = " ".join(lines)
    assert f"You took {mine} tons of fish in all" in text and "The whole group took" in text
    assert all("_" not in line for line in lines)
    if outcome["collapsed"]:
        assert "fished out" in text and "ended the game early" in text
    else:
        assert f"{outcome['months'][-1]['stock_after']} tons of fish were left" in text


def test_commons_results_say_why_the_lake_died():
    game, _ = _game("commons", people={"agent_0"}, config=COMMONS)
    month = {"month": 2, "stock_before": 60, "collected": {"agent_0": 10, "agent_1": 30, "agent_2": 18}, "stock_after": 2}
    first = {"month": 1, "stock_before": 100, "collected": {"agent_0": 5, "agent_1": 20, "agent_2": 45}, "stock_after": 30}
    lines = game.describe({"months": [first, month], "collapsed": True}, "agent_0")
    assert lines == [
        "The game lasted 2 months of the 3 planned.",
        "You took 15 tons of fish in all (month 1: 5, month 2: 10).",
        "The whole group took 128 tons of fish.",
        "In month 2 the group took 58 tons of fish, which left 2.",
        "Fewer than 5 tons are left: the lake is fished out, and fishing ends for everyone. That ended the game early.",
    ]


# the bonus in words ------------------------------------------------------------------------------


def test_the_bonus_rule_in_words_and_money_not_code_names():
    values = bonus_values({"alice_gain": 60, "bob_gain": 40}, {}, "alice")
    text = explain_bonus("0.02 * alice_gain", values, 2.0, role="alice")
    assert text == "You earn 2 cents for every point of your gain. Your gain was 60, so your bonus is $1.20 (never below $0.00 or above $2.00)."
    assert "alice_gain" not in explain_bonus("0.5 + min(0.02 * alice_gain, 1)", values, 2.0, role="alice")
    assert explain_bonus("0.5 + 0.01 * my_gain", values, 2.0, role="alice").startswith("You earn 50 cents plus 1 cent for every point of your gain.")
    assert explain_bonus("0.02 * alice_gain", values, 2.0, role="alice", words="You earn 2 cents for every dollar you keep.") == (
        "You earn 2 cents for every dollar you keep. For your game that is $1.20 (never below $0.00 or above $2.00)."
    )
    assert explain_bonus("0.02 * alice_gain", {}, 2.0, role="alice") == "Your bonus depends on your gain, which your game did not record, so it is $0.00."
    assert explain_bonus("2.5", {}, 5.0) == "Every participant receives a bonus of $2.50."
    assert bonus_values({}, {"self_gain_bob": 0.4}, "bob")["my_self_gain"] == 0.4


def test_ready_served_studies_load_and_state_their_bonus_in_words():
    """Every studies/web_*.toml loads with its [web] settings; scale questions carry end labels
    that fit them; the bonus explanation of each role uses no code name."""
    from agorabench.core.study import load_study
    from agorabench.web.settings import web_settings
    from support.helpers import ROOT

    served = sorted((ROOT / "studies").glob("web_*.toml"))
    assert len(served) >= 6
    for path in served:
        study = load_study(path)
        settings = web_settings(study)
        humans = {r for s in study.iter_specs() for r, m in s.seats.items() if study.models[m].is_human}
        assert humans, path
        for role in humans:
            words = explain_bonus(settings.bonus_rule(role), {}, settings.bonus_max, role=role, words=settings.bonus_words(role))
            assert not re.search(r"\b[a-z]+_[a-z_]+\b", words), (path.name, role, words)
        for q in settings.questionnaire:
            if q.kind == "scale" and q.question.rstrip().endswith("?"):
                assert q.scale_labels != ("strongly disagree", "strongly agree"), (path.name, q.name)


def test_waiting_page_says_the_answer_is_in_only_after_an_answer():
    from agorabench.web.app import templates

    wait = templates.env.get_template("wait.html")
    ctx = dict(waiting=0, instructions="rules", token="t", csrf="c", title="T", stage="play", step=None, version=1, poll=True)
    before = wait.render(history=[{"role": "user", "content": "The game begins."}], **ctx)
    after = wait.render(history=[{"role": "user", "content": "Your turn."}, {"role": "assistant", "content": "Answer: 3"}], **ctx)
    assert "Waiting for the other player" in before and "Your answer is in" not in before
    assert "Your answer is in. Waiting for the other player" in after


def test_a_one_word_field_name_stays_a_word_in_form_messages():
    """The negotiation's cap message names "a price": it is not turned into the field's label
    ("A the price you offer of $5,000 ...")."""
    from agorabench.games.glee.negotiation import price_type

    action, errors = parse_form(price_type(True, 100), {"price": "5000", "message": "hello"}, "bob")
    assert action is None and errors == ["A price of $5,000 is far above anything at stake (at most $1,000)"]


def test_envy_forms_for_a_person_name_what_each_field_means():
    """A person rates the workplace statements themselves (not "Self esteem: 1-5") and gives
    the reason for a point choice as an optional line; models keep the types of the paper."""
    from agorabench.games.envy.point_allocation import Choice, PersonChoice
    from agorabench.games.envy.workplace import Ratings, person_ratings

    labels = [f.label for f in form_fields(person_ratings("Sam"))]
    assert "Empathy: I feel empathy towards Sam" in labels and "Envy: I feel envy or jealousy" in labels
    assert issubclass(person_ratings("Sam"), Ratings) and issubclass(PersonChoice, Choice)
    assert [f.label for f in form_fields(PersonChoice)] == ["Choice", "Why you pick it (optional)"]
    assert "reasoning" not in [f.name for f in form_fields(PersonChoice) if f.required]
