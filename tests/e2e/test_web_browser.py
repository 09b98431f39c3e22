"""Participants in a real browser (Debian's chromium via Playwright) against the web app on
127.0.0.1: one full journey per game against scripted players (the bargaining one also sends a
split that does not add up first, for the form-error checks), one against the embedded model,
a refresh and a server restart mid-game, and a model message carrying a script tag."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agorabench import families
from agorabench.analysis.report import build_report
from agorabench.core.table import TIMEOUT
from agorabench.games.glee.strategies import BARGAINING
from agorabench.store.store import Store
from support.browser_reuse import fresh_page, person, person_context  # noqa: F401  (fixtures)
from support.web import TOKEN, AppServer, browser, journey, ServeProcess, study_text, submit  # noqa: F401  (browser: fixture)

def served(game: str) -> tuple:
    """How a person plays ``game`` here, from its family's manifest (``families.journey``): the
    person's role, the seats, the parameters, the opponents' model entry, the answer policy, the
    person's turns expected (None: not fixed) and the phases expected among them."""
    j = families.journey(game)
    answers = j["answers"]
    return (
        j["role"],
        [{j["role"]: "participant", "*": "opponent"}],
        j["config"],
        [{"name": "opponent", "spec": f"strategy/{j['opponent']}"}],
        lambda f, prompt, opts: answers.get(f),
        j["turns"],
        j["phases"],
    )


def test_a_game_without_a_declared_journey_still_gets_one():
    """Every registered game is played below; one whose manifest declares no journey gets the
    defaults (its example, first role, first strategy, the form's own choices)."""
    for game in families.game_names():
        j = families.journey(game)
        assert j["role"] and j["opponent"] in families.strategies(game), game


def _stored(db, study: str, role: str) -> tuple[dict, list[dict]]:
    store = Store(db)
    try:
        (game,) = [g for g in store.games(study)]
        turns = store.turns(study)
    finally:
        store.dispose()
    return game, turns


def _play_served(page, game: str, folder: Path, on_turn=None) -> tuple[dict, Path, str]:
    """A person's journey through ``game`` as :func:`served` says, in a study of its own under
    ``folder``; what was seen, the store's path and the study's name."""
    _role, seats, fixed, models, policy, *_ = served(game)
    name = "web_" + game.replace(".", "_")
    path = folder / "study.toml"
    path.write_text(study_text(name, game, seats, fixed, models, {"completion_code": "DONE42", "bonus": "2.5"}))
    db = folder / "web.db"
    with AppServer(path, db) as server:
        seen = journey(page, server.url, f"P{abs(hash(game)) % 10**6}", policy, on_turn=on_turn)
    return seen, db, name


@pytest.fixture(scope="module")
def bargaining_played(person_context, tmp_path_factory) -> dict[str, Any]:
    """The bargaining game's journey, played once for the two tests that read it (the per-game
    checks and the form-error checks): its first offer is first sent as a split that does not add
    up (what the page then says and still holds is kept), and every body the browser got."""
    bodies: list[str] = []
    refused: dict[str, Any] = {}

    def keep(r) -> None:
        if r.ok and r.request.method != "HEAD" and r.status != 303:
            bodies.append(r.text())

    def first_wrong(page, n):
        if n == 0:
            page.fill("input[name='alice_gain']", "70")
            page.fill("input[name='bob_gain']", "70")
            submit(page, "#submit-turn")
            refused["errors"] = page.inner_text("#form-errors")
            refused["kept"] = page.input_value("input[name='alice_gain']"), page.input_value("input[name='bob_gain']")

    with fresh_page(person_context) as page:
        page.on("response", keep)
        try:
            seen, db, name = _play_served(page, "glee.bargaining", tmp_path_factory.mktemp("bargaining"), on_turn=first_wrong)
        finally:
            page.remove_listener("response", keep)
    return {"seen": seen, "db": db, "name": name, "refused": refused, "bodies": bodies}


@pytest.mark.parametrize("game", families.game_names())
def test_participant_journey_per_game(game, person, tmp_path, request):
    role, seats, fixed, models, policy, expected, phases = served(game)
    if game == "glee.bargaining":  # its one journey, shared with the form-error checks below
        played = request.getfixturevalue("bargaining_played")
        seen, db, name = played["seen"], played["db"], played["name"]
    else:
        seen, db, name = _play_served(person, game, tmp_path)
    assert seen["code"] == "DONE42" and seen["bonus"] == "$2.50"
    assert seen["instructions"].strip(), "instructions come from the game's own system prompt"
    for text in [seen["instructions"], *seen["prompts"]]:  # what tells models how to write answers is left out
        assert "XML" not in text and "JSON" not in text and '{"' not in text and "Answer:" not in text, text
    assert all(p.strip() for p in seen["prompts"])
    g, turns = _stored(db, name, role)
    assert g["status"] == "done" and g["seats"][role].startswith("human:")
    human = [t for t in turns if t["role"] == role]
    assert human and all(t["valid"] and t["latency"] > 0 for t in human)
    assert seen["turns"] == len(human) >= 1
    if expected is not None:
        assert seen["turns"] == expected
    for phase, n in phases.items():
        assert [t["phase"] for t in human].count(phase) == n, phase
    assert seen["attention"] == 1  # reached in play, or shown before the questionnaire when the game ended first
    # the results page: the game's own account of the outcome, and the bonus rule applied
    assert seen["result"].strip() and "Every participant receives a bonus of $2.50." in seen["bonus_rule"]
    numbers = [int(re.search(r"Step (\d+) of", s).group(1)) for s in seen["steps"]]
    assert numbers == sorted(numbers) and numbers[-1] > numbers[0], seen["steps"]
    report = build_report(Store(db), name, tmp_path / "report")
    assert "human: 1 person, 1 game" in report.read_text()  # the person, pooled as `human`


def test_bargaining_form_errors_are_shown_and_stored(bargaining_played):
    """A split that does not add up is refused with the action's own message, and the message
    is kept with the turn; the hidden discount factor of Bob is in no byte the browser got."""
    refused = bargaining_played["refused"]
    assert "must add up to $100" in refused["errors"]
    # what was typed stays, so the person corrects one number instead of retyping both
    assert refused["kept"] == ("70", "70")
    _, turns = _stored(bargaining_played["db"], bargaining_played["name"], "alice")
    first = [t for t in turns if t["role"] == "alice"][0]
    assert first["valid"] and "must add up to $100" in (first["error"] or "")
    shown = "\n".join(bargaining_played["bodies"])
    assert "10%" in shown  # Alice's own loss per round is shown ...
    assert "27%" not in shown and "0.73" not in shown and "73%" not in shown  # ... Bob's never


def test_script_in_a_model_message_renders_as_text(person, tmp_path):
    from agorabench.core.agents import Strategy
    from agorabench.games.glee.common import Decision

    class Scripted(Strategy):
        def decide(self, request):
            obs = request.prompt.observation
            if obs["phase"] == "respond":
                return Decision(decision="reject")
            return request.action_type(alice_gain=50, bob_gain=50, message="<script>window.pwned = 1</script><b>bold</b>")

    BARGAINING["xss-test"] = Scripted
    try:
        path = tmp_path / "study.toml"
        path.write_text(study_text("web_xss", "glee.bargaining", [{"alice": "participant", "bob": "x"}], {"money": 100, "horizon": 2, "messages": True}, [{"name": "x", "spec": "strategy/xss-test"}], {"attention_checks": []}))
        seen_script = []

        def check(page, n):
            if n == 1:  # Bob's proposal with its message is on screen
                seen_script.append(page.inner_text("#prompt"))
                assert page.evaluate("window.pwned") is None
                assert page.query_selector("#prompt b") is None

        with AppServer(path, tmp_path / "web.db") as server:
            journey(person, server.url, "PXSS", lambda f, p, o: {"alice_gain": "50", "bob_gain": "50", "message": "<i>hi</i>", "decision": "accept"}.get(f), on_turn=check)
        assert "<script>window.pwned = 1</script><b>bold</b>" in seen_script[0]
    finally:
        del BARGAINING["xss-test"]


def test_refresh_and_server_restart_resume_at_the_same_turn(person, tmp_path):
    """Mid-game, a reload and a killed-and-restarted server show the same open turn with the
    same history; the game then finishes with every turn stored once."""
    path = tmp_path / "study.toml"
    path.write_text(study_text("web_resume", "glee.bargaining", [{"alice": "participant", "bob": "opponent"}], {"money": 100, "horizon": 3}, [{"name": "opponent", "spec": "strategy/always-reject"}], {"attention_checks": []}))
    db = tmp_path / "web.db"
    server = ServeProcess(path, db).start()
    page = person
    try:
        page.goto(f"{server.url}/start?participant=resume1")
        submit(page, "#agree")
        submit(page, "#continue")
        page.check("input[name='q0'][value='Yes']")
        submit(page, "#submit-quiz")
        page.fill("input[name='alice_gain']", "55")
        page.fill("input[name='bob_gain']", "45")
        submit(page, "#submit-turn")
        page.wait_for_selector("input[name='decision']")
        before = page.inner_text("#prompt"), page.inner_text("#transcript")
        assert "Round 2" in before[0]
        url = page.url
        page.reload()
        assert (page.inner_text("#prompt"), page.inner_text("#transcript")) == before
        page.goto("about:blank")  # the connection is lost while the server is down
        server.kill()
        server.start()
        page.goto(url)
        page.wait_for_selector("input[name='decision']")
        assert (page.inner_text("#prompt"), page.inner_text("#transcript")) == before
        page.check("input[name='decision'][value='reject']")
        submit(page, "#submit-turn")
        page.wait_for_selector("input[name='alice_gain']")
        assert "Round 3" in page.inner_text("#prompt")
        page.fill("input[name='alice_gain']", "50")
        page.fill("input[name='bob_gain']", "50")
        submit(page, "#submit-turn")
        page.wait_for_selector("#submit-results")
    finally:
        server.stop()
    g, turns = _stored(db, "web_resume", "alice")
    assert g["status"] == "done" and g["outcome"]["agreed"] is False
    assert [(t["idx"], t["role"], t["phase"]) for t in turns] == [(0, "alice", "offer"), (1, "bob", "respond"), (2, "bob", "offer"), (3, "alice", "respond"), (4, "alice", "offer"), (5, "bob", "respond")]
    assert [t["action"] for t in turns if t["role"] == "alice"] == [{"alice_gain": 55.0, "bob_gain": 45.0}, {"decision": "reject"}, {"alice_gain": 50.0, "bob_gain": 50.0}]


@pytest.mark.llm
def test_journey_against_the_embedded_model(person, tmp_path):
    path = tmp_path / "study.toml"
    model = {"name": "smol", "spec": "local", "max_tokens": 48, "constrained": True, "params": {"n_threads": int(__import__("os").environ.get("AGORA_THREADS", "2"))}}
    path.write_text(study_text("web_llm", "glee.bargaining", [{"alice": "participant", "bob": "smol"}], {"money": 100, "horizon": 2}, [model]))
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        seen = journey(person, server.url, "PLLM", lambda f, p, o: {"alice_gain": "50", "bob_gain": "50", "decision": "reject"}.get(f))
    assert re.fullmatch(r"[0-9A-F]{10}", seen["code"])
    g, turns = _stored(db, "web_llm", "alice")
    assert g["status"] == "done"
    bob = [t for t in turns if t["role"] == "bob"]
    assert bob and all(t["prompt_tokens"] > 0 for t in bob if not t["cached"])
    assert g["seats"]["bob"] == "smol" and g["seats"]["alice"].startswith("human:")
    assert "human:" in build_report(Store(db), "web_llm", tmp_path / "report").read_text()
    assert TIMEOUT not in {t["error"] for t in turns}


def test_a_valid_session_url_in_another_browser_must_re_enter(browser, person, tmp_path):
    """Issue 22 item 13: the session URL copied into a second browser (no session cookie) shows
    the re-entry page, not the participant's game; the first browser plays on."""
    _role, seats, fixed, models, *_ = served("glee.bargaining")
    path = tmp_path / "study.toml"
    path.write_text(study_text("web_foreign", "glee.bargaining", seats, fixed, models))
    stranger = browser.new_context()  # the owner's browser is the module's page
    try:
        with AppServer(path, tmp_path / "web.db") as server:
            page = person
            page.goto(f"{server.url}/start?PROLIFIC_PID=PFOREIGN&STUDY_ID=s&SESSION_ID=x")
            url = page.url
            assert "/p/" in url
            other = stranger.new_page()
            response = other.goto(url)
            assert response.status == 403 and "entry link" in other.content()
            assert page.goto(url).status == 200 and "entry link" not in page.content()
    finally:
        stranger.close()


def test_a_resume_link_continues_the_game_in_a_new_browser_context(browser, tmp_path):
    """A participant whose browser is gone gets a link from the dashboard; a fresh context (no
    cookie) opens it and plays on from the open turn."""
    import httpx

    _role, seats, fixed, models, *_ = served("glee.bargaining")
    path = tmp_path / "study.toml"
    path.write_text(study_text("web_relink", "glee.bargaining", seats, fixed, models, {"attention_checks": [], "quiz": []}))
    with AppServer(path, tmp_path / "web.db") as server:
        first = browser.new_context()
        page = first.new_page()
        page.goto(f"{server.url}/start?PROLIFIC_PID=RELINK&STUDY_ID=s&SESSION_ID=x")
        submit(page, "#agree")
        submit(page, "#continue")
        page.wait_for_selector("input[name='alice_gain']")
        token = page.url.rsplit("/", 1)[-1]
        first.close()  # the device is gone
        dash = httpx.Client(base_url=server.url, follow_redirects=True)
        csrf = re.search(r'name="csrf" value="([^"]+)"', dash.get(f"/dash?token={TOKEN}").text).group(1)
        link = re.search(r'id="resume-link" value="([^"]+)"', dash.post(f"/dash/resume/{token}", data={"csrf": csrf}).text).group(1)
        second = browser.new_context()
        page = second.new_page()
        page.goto(link)
        page.wait_for_selector("input[name='alice_gain']")
        page.fill("input[name='alice_gain']", "50")
        page.fill("input[name='bob_gain']", "50")
        submit(page, "#submit-turn")
        page.wait_for_selector("input[name='decision']")
        assert "Round 2" in page.inner_text("#prompt")
        second.close()
