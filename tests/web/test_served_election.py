"""Issue 43: people stand and vote, in a real browser (Debian's chromium via Playwright, the app
served on 127.0.0.1). In a commons group of eight with an elected leader, one person is a
candidate and types an agenda in the page, the other reads the candidates' agendas and votes from
a list of names; the computer plays the other six fishers. The stored game holds the agenda, the
vote, the tally and the winner; both people read who won; no page shows text meant for models.
The ready study (studies/web_commons_election.toml) loads with the same seats; the models'
prompts are the same with people at the table."""

from __future__ import annotations

import asyncio
import re
import time
from concurrent.futures import ThreadPoolExecutor

from playwright.sync_api import Error as PlaywrightError

from agorabench import families
from agorabench.core.agents import RandomAnswers
from agorabench.core.game import Prompts
from agorabench.core.study import load_study
from agorabench.core.table import Table
from agorabench.store.participants import Participants
from agorabench.store.store import Store
from support.helpers import ROOT
from support.web import AppServer, browser, fill_turn, submit, web_study  # noqa: F401  (browser: fixture)

SEATS = [{"agent_0": "participant", "agent_1": "fisher", "agent_2": "fisher", "agent_3": "fisher", "agent_4": "participant", "agent_5": "voter", "agent_6": "voter", "agent_7": "voter", "manager": "summariser"}]
MODELS = [
    {"name": "fisher", "spec": "strategy/sustainable"},
    {"name": "voter", "spec": "strategy/sustainable", "params": {"vote": "John"}},  # the computer voters back John (agent_0)
    {"name": "summariser", "spec": "strategy/summariser"},
]
FIXED = {"scenario": "fishery", "n_agents": 8, "months": 1, "max_conversation_steps": 2, "memory": "retrieved", "leadership": "elected", "svo_population": "balanced"}
WEB = {"attention_checks": [], "quiz": [], "starts_per_minute": 0, "group_fallback": "fisher", "group_wait": 60, "time_limit": 60, "idle_timeout": 90, "bonus": "0.02 * my_catch"}
AGENDA = "Each of us takes at most five tons a month, and whoever takes more sits out the next month."
#: What people never read: the words of a prompt meant for a model.
MODEL_WORDS = re.compile(r"\bseats?\b|\bmodels?\b|JSON|Think step by step|Answer:|YYYY|social value orientation|SVO angle", re.IGNORECASE)


def _seen(page, texts: list[str]) -> None:
    texts.append(page.inner_text("body"))


def _play(pages: dict[str, object], seen: dict[str, list[str]], deadline: float) -> None:
    """Both people answer every turn that comes (the first option, a small number, short
    text) until both reach the results page."""
    done: set[str] = set()
    while len(done) < len(pages):
        assert time.time() < deadline, {k: v[-1][:800] for k, v in seen.items() if v}
        for who, page in pages.items():
            if who in done:
                continue
            try:
                if page.query_selector("#submit-results"):
                    _seen(page, seen[who])
                    done.add(who)
                elif page.query_selector("#turn-form"):
                    _seen(page, seen[who])
                    fill_turn(page, lambda name, prompt, options: "3" if name == "amount" else None)
                    submit(page, "#submit-turn")
            except PlaywrightError:  # a waiting page reloading itself: look again
                continue
        time.sleep(0.1)


def test_a_person_stands_for_election_and_another_votes(browser, tmp_path):
    path = web_study(tmp_path, name="web_vote", game="commons", seats=SEATS, models=MODELS, fixed=FIXED, web=WEB)
    db = tmp_path / "web.db"
    seen: dict[str, list[str]] = {"alice": [], "bob": []}
    with AppServer(path, db) as server:
        contexts = {k: browser.new_context(viewport={"width": 390, "height": 800}) for k in seen}
        pages = {k: c.new_page() for k, c in contexts.items()}
        try:
            alice, bob = pages["alice"], pages["bob"]
            alice.goto(f"{server.url}/start?PROLIFIC_PID=STANDS&STUDY_ID=s&SESSION_ID=x")
            submit(alice, "#agree")
            submit(alice, "#continue")
            alice.wait_for_selector("#group-waiting")
            bob.goto(f"{server.url}/start?PROLIFIC_PID=VOTES&STUDY_ID=s&SESSION_ID=y")
            submit(bob, "#agree")
            submit(bob, "#continue")
            # Alice stands: her first turn is her agenda, typed in the page
            alice.wait_for_selector("#turn-form textarea[name=agenda]", timeout=30_000)
            _seen(alice, seen["alice"])
            assert "you are one of the candidates" in alice.inner_text("#prompt")
            assert "What you remember:" in alice.inner_text("#prompt") and "remembers" not in alice.inner_text("#prompt")  # addressed as "you"
            alice.fill("textarea[name=agenda]", AGENDA)
            submit(alice, "#submit-turn")
            # Bob votes: the ballot lists the four candidates, Alice's agenda among theirs
            bob.wait_for_selector("#turn-form select[name=vote]", timeout=30_000)
            _seen(bob, seen["bob"])
            ballot = [o.get_attribute("value") for o in bob.query_selector_all("select[name=vote] option")]
            assert ballot[0] == "" and sorted(ballot[1:]) == ["Emma", "Jack", "John", "Kate"]  # no name preselected
            assert bob.eval_on_selector("select[name=vote]", "s => s.value") == ""
            assert f"John: {AGENDA}" in bob.inner_text("#prompt")
            bob.select_option("select[name=vote]", "Kate")
            submit(bob, "#submit-turn")
            _play(pages, seen, time.time() + 90)
        finally:
            for c in contexts.values():
                c.close()
    store = Store(db)
    try:
        rows = {r["role"]: r for r in Participants(store).of_study("web_vote")}
        game = store.game(rows["agent_0"]["game_id"])
    finally:
        store.dispose()
    assert rows["agent_4"]["game_id"] == game["id"]
    [election] = game["outcome"]["leadership"]["elections"]
    assert election["agendas"]["John"] == AGENDA
    assert election["votes"] == {"Luke": "Kate", "Noah": "John", "Olivia": "John", "Liam": "John"}
    assert election["tally"] == {"John": 3, "Kate": 1, "Jack": 0, "Emma": 0} and election["winner"] == "John"
    for who, texts in seen.items():
        assert any("John won the election" in t for t in texts), who  # both read the result
        for text in texts:
            found = MODEL_WORDS.search(text)
            assert found is None, (who, found.group(0), text)


def test_the_ready_election_study_seats_a_candidate_and_a_voter():
    study = load_study(ROOT / "studies" / "web_commons_election.toml")
    [spec] = study.expand()
    people = [r for r, m in spec.seats.items() if study.models[m].is_human]
    assert people == ["agent_0", "agent_4"] and spec.config["leadership"] == "elected"


def test_people_read_the_election_in_their_words_and_models_keep_their_prompts():
    """The same game with and without people: a model candidate's agenda prompt is byte for byte
    the same; a person standing reads no social value orientation and no line format, a person
    voting is asked for no reasons."""
    cls = families.load_game("commons")
    cfg = cls.Config(**FIXED)

    def prompts(people: frozenset[str]) -> dict[tuple[str, str], str]:
        game = cls(cfg, Prompts(cls.prompt_dir), {}, people=people)
        table = Table({r: RandomAnswers() for r in cls.active_roles(cfg)}, seed=5)
        with ThreadPoolExecutor(1) as pool:  # a thread of its own: Playwright's loop runs in this one
            pool.submit(asyncio.run, game.play(table)).result()
        return {(t.role, t.phase): t.messages[-1]["content"] for t in table.turns if t.phase in ("agenda", "vote")}

    models, mixed = prompts(frozenset()), prompts(frozenset({"agent_0", "agent_4"}))
    assert mixed["agent_1", "agenda"] == models["agent_1", "agenda"]
    assert "SVO angle" in models["agent_0", "agenda"] and "SVO" not in mixed["agent_0", "agenda"]
    assert "YYYY" in models["agent_0", "agenda"] and "YYYY" not in mixed["agent_0", "agenda"]
    assert "give your reasons" in models["agent_4", "vote"] and "give your reasons" not in mixed["agent_4", "vote"]
