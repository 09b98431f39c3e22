"""Issue 41 items 5 and 7: after an answer the waiting page shows the answer and says it is in;
what people read is people's wording (the form's own labels for their past answers, another
player's words between quotation marks, "1 point", "1 round", the peer named as the instructions
name it) while every model keeps its prompts byte for byte."""

from __future__ import annotations

import asyncio
import re

from agorabench import families
from agorabench.core.agents import RandomAnswers
from agorabench.core.game import Prompts
from agorabench.core.speech import quote_marked
from agorabench.core.table import FORMAT, GAME, SPEECH, Part, Table
from agorabench.web.forms import answer_text, form_fields
from agorabench.web.play import for_person
from support.web import AppServer, Participant, web_study

PAIR = [{"alice": "participant", "bob": "participant"}]
PLAIN = {"attention_checks": [], "quiz": [], "starts_per_minute": 0, "group_fallback": "spe", "group_wait": 60}


def _to_play(p: Participant) -> None:
    p.enter()
    p.post("consent", agree="yes")
    p.post("instructions")


def _transcript(page: str) -> list[tuple[str, str]]:
    """The transcript's entries: (who, text)."""
    items = re.findall(r'<li class="(you|game)"><span class="who">[^<]*</span><div class="text">(.*?)</div></li>', page, re.S)
    return [(who, text.strip()) for who, text in items]


def test_the_waiting_page_echoes_the_answer_and_says_it_is_in(tmp_path):
    path = web_study(tmp_path, name="web_echo", seats=PAIR, models=[{"name": "spe", "spec": "strategy/spe"}], web=PLAIN)
    with AppServer(path, tmp_path / "w.db") as server:
        a, b = Participant(server.url, "ECHOA"), Participant(server.url, "ECHOB")
        _to_play(a)
        _to_play(b)
        a.post("play", seq=a.seq(), alice_gain="70", bob_gain="30")
        waiting = a.get(a.url).text  # Bob, a person, has not answered yet
        assert 'id="thinking"' in waiting and "Your answer is in. Waiting for the other player" in waiting
        who, said = _transcript(waiting)[-1]
        assert who == "you" and said == "Amount Alice (you) receives: 70\nAmount Bob receives: 30", said
        assert "gain" not in said
        # Bob's page before his first answer says nothing is in
        b_page = b.until('id="turn-form"')
        assert "Your answer is in" not in b_page
        b.post("play", seq=b.seq(), decision="reject")
        b.post("play", seq=b.seq(), alice_gain="45", bob_gain="55")  # round 2: Bob's offer
        b_wait = b.get(b.url).text
        assert "Your answer is in" in b_wait and _transcript(b_wait)[-1][1] in ("Amount Bob (you) receives: 55\nAmount Alice receives: 45", "Amount Alice receives: 45\nAmount Bob (you) receives: 55")
        assert ("you", "Your answer: reject") in _transcript(b_wait)  # an answer of one value
        # once the game tells Alice more, her answer is shown once, from the game's own record
        page = a.until('id="turn-form"')
        mine = [t for w, t in _transcript(page) if w == "you"]
        assert mine == ["Amount Alice (you) receives: 70\nAmount Bob receives: 30"], mine


def test_a_one_person_game_waits_for_no_other_player(tmp_path):
    from agorabench.web.app import templates

    wait = templates.env.get_template("wait.html")
    ctx = dict(waiting=0, instructions="rules", token="t", csrf="c", title="T", stage="play", step=None, version=1, poll=True, history=[])
    assert "other player" not in wait.render(alone=True, **ctx) and "Waiting for the other player" in wait.render(alone=False, **ctx)


def test_past_answers_read_in_the_forms_words():
    from agorabench.games.commons.actions import Remark, person_remark

    kind = person_remark(Remark, ("Kate", "Jack"))
    fields = {f.name: f for f in form_fields(kind, "agent_0")}
    ended = kind(message="Bye.", next_speaker="Kate", end_conversation=True).render()
    assert answer_text(ended, fields) == "Message: Bye.\nWho speaks next: Kate\nYou chose: Say this and end the meeting"
    said = kind(message="Hi.", next_speaker="Jack").render()
    assert "End conversation" not in answer_text(said, fields) and "False" not in answer_text(said, fields)
    assert answer_text('{"amount": 0}') == "Your answer: 0"  # nothing is not a missing answer


def test_another_players_words_are_quoted_for_a_person_and_marked_for_a_model():
    parts = (Part(GAME, "Kate:\n"), Part(SPEECH, "> I suggest 16.\n> Agreed?"), Part(GAME, "\nYour turn."), Part(FORMAT, "Reply with JSON."))
    assert for_person(parts, set()) == "Kate:\n\u201cI suggest 16.\nAgreed?\u201d\nYour turn."
    assert quote_marked("I suggest 16.").count("> ") == 1  # what models read is unchanged


def test_counts_of_one_and_rounds_in_words():
    from agorabench.games.glee.bargaining import Bargaining
    from agorabench.games.subskills.subskills import singular_ones
    from agorabench.games.ultimatum.ultimatum import Ultimatum

    people = Prompts(Ultimatum.prompt_dir).for_people()
    told = people.render("respond", rounds=1, round=1, pie=10, offer=1, keep=9, format="")
    assert "you get 1 point and" in told and "1 points" not in told
    assert "you get 3 points" in people.render("respond", rounds=1, round=1, pie=10, offer=3, keep=7, format="")
    assert "you get 1 points" in Prompts(Ultimatum.prompt_dir).render("respond", rounds=1, round=1, pie=10, offer=1, keep=9, format="")  # models: as before
    game = Bargaining(Bargaining.Config(money=100, horizon=2), Prompts(Bargaining.prompt_dir), people={"alice"})
    assert "in 1 round," in game.describe({"agreed": False, "rounds_played": 1}, "alice")[0]
    assert "in 2 rounds," in game.describe({"agreed": False, "rounds_played": 2}, "alice")[0]
    assert singular_ones("catches 1 tons; 21 tons; 1 flocks; 1 glass") == "catches 1 ton; 21 tons; 1 flock; 1 glass"


def test_envy_points_names_the_peer_as_its_instructions_do():
    cls = families.load_game("envy.points")
    cfg = cls.Config(**families.examples()["envy.points"])
    names = {"focal": "Player A", "peer": "Player B"}

    def transcript(people: frozenset[str]) -> str:
        table = Table({r: RandomAnswers() for r in cls.active_roles(cfg)}, seed=1)
        asyncio.run(cls(cfg, Prompts(cls.prompt_dir), names, people=people).play(table))
        return "\n".join(m["content"] for m in table.transcripts["focal"] if m["role"] != "assistant")

    person = transcript(frozenset({"focal"}))
    assert "Player B" not in person and "the other player" in person
    assert "Player B" in transcript(frozenset())  # a model reads the peer's name, as before


def test_the_questionnaire_does_not_call_every_study_a_game():
    from agorabench.web.app import templates

    page = templates.env.get_template("questionnaire.html").render(items=[], token="t", csrf="c", title="T", errors=None)
    assert "game is over" not in page
