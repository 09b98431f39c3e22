"""The web app over HTTP (no browser): forms derived from action types, the time limit, access
control, the dashboard and its transcript viewer, bonus rules and the bonus export."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from agorabench.core.study import StudyError, load_study
from agorabench.core.table import TIMEOUT
from agorabench.store.store import Store
from agorabench.web.forms import form_fields, parse_form
from agorabench.web.participants import participant_from_query
from agorabench.web.settings import evaluate_bonus, web_settings
from support.web import TOKEN, AppServer, Participant, web_study


# forms ------------------------------------------------------------------------------------


def test_forms_follow_the_action_types():
    from agorabench.games.commons.actions import Harvest, Utterance
    from agorabench.games.envy.point_allocation import Choice
    from agorabench.games.envy.workplace import Ratings
    from agorabench.games.glee.bargaining import offer_type

    offer = offer_type(100.0, True)
    kinds = {f.name: (f.kind, f.options, f.minimum) for f in form_fields(offer)}
    assert kinds == {"alice_gain": ("number", [], 0), "bob_gain": ("number", [], 0), "message": ("textarea", [], None)}
    assert {f.name: f.kind for f in form_fields(Ratings)} == {"reflection": "textarea", "self_esteem": "radio", "empathy": "radio", "motivation": "radio", "collaboration": "radio", "envy": "radio"}
    assert form_fields(Ratings)[1].options == ["1", "2", "3", "4", "5"]
    assert form_fields(Choice)[0].options == ["A", "B", "C", "D"]
    assert [(f.name, f.kind, f.required) for f in form_fields(Utterance)] == [("message", "textarea", True), ("next_speaker", "textarea", False), ("end_conversation", "checkbox", False), ("proposed_limit", "number", False)]
    assert form_fields(Harvest)[0].step == "1"
    # server-side checks: bounds, types, the action's own rule, unknown fields ignored
    assert parse_form(offer, {"alice_gain": "60", "bob_gain": "40", "message": "hi", "evil": "x"})[0].model_dump() == {"alice_gain": 60, "bob_gain": 40, "message": "hi"}
    assert "add up to $100" in parse_form(offer, {"alice_gain": "60", "bob_gain": "60"})[1][0]
    assert parse_form(offer, {"alice_gain": "-5", "bob_gain": "105"})[0] is None
    assert parse_form(offer, {"alice_gain": "1e400", "bob_gain": "0"})[0] is None
    assert parse_form(offer, {"alice_gain": "abc", "bob_gain": "40"})[1] == ["Amount Alice receives: 'abc' is not a number."]
    assert parse_form(Ratings, {"self_esteem": "9", "empathy": "1", "motivation": "1", "collaboration": "1", "envy": "1"})[0] is None
    assert parse_form(Choice, {"choice": "E"})[0] is None
    assert parse_form(offer, {"alice_gain": "60", "bob_gain": "40", "message": "x" * 5000})[0] is None
    u, errors = parse_form(Utterance, {"message": "hello", "proposed_limit": "", "end_conversation": "true"})
    assert errors == [] and u.proposed_limit is None and u.end_conversation is True


def test_entry_links_and_bonus_rules(tmp_path):
    assert participant_from_query({"PROLIFIC_PID": "abc123", "STUDY_ID": "s", "SESSION_ID": "x"}) == ("prolific", "abc123", {"STUDY_ID": "s", "SESSION_ID": "x"})
    assert participant_from_query({"workerId": "W1", "assignmentId": "A", "hitId": "H"})[:2] == ("mturk", "W1")
    assert participant_from_query({"participant": "p-1"})[:2] == ("link", "p-1")
    assert participant_from_query({"participant": "<x>"}) is None and participant_from_query({}) is None
    assert evaluate_bonus("0.02 * alice_gain", {"alice_gain": 60}, 2.0) == 1.2
    assert evaluate_bonus("0.05 * alice_gain", {"alice_gain": 60}, 2.0) == 2.0  # capped
    assert evaluate_bonus("min(1, efficiency) - 2", {"efficiency": 0.5}, 2.0) == 0.0  # never negative
    assert evaluate_bonus("alice_gain", {}, 2.0) == 0.0  # no deal: no such number
    bad = web_study(tmp_path, name="bad", web={"bonus": "__import__('os').system('true')"})
    with pytest.raises(StudyError, match="web.bonus"):
        web_settings(load_study(bad))


# the time limit ---------------------------------------------------------------------------


def test_a_person_at_the_table_answers_times_out_and_keeps_form_errors():
    """The Human player through a desk, with no web: a valid answer with the errors the form
    showed, then no answer in time (the game's fallback applies, the turn records a timeout)."""
    import asyncio

    from agorabench.core.agents import Human, HumanAnswer
    from agorabench.core.game import Prompts
    from agorabench.core.table import Table
    from agorabench.games.envy.point_allocation import Choice, PointAllocation

    class Desk:
        def __init__(self):
            self.seen = []

        async def wait_answer(self, request):
            self.seen.append(request.prompt.phase)
            if len(self.seen) == 1:
                return HumanAnswer(Choice(choice="C"), 4.5, ("Choice: choose one of A, B, C, D.",))
            return None

    config = PointAllocation.Config(matrix="M1")
    game = PointAllocation(config, Prompts(PointAllocation.prompt_dir), {"focal": "you", "peer": "P"})
    table = Table({"focal": Human(Desk())}, seed=1)
    outcome = asyncio.run(game.play(table))
    first, second, third = table.turns
    assert (first.valid, first.action, first.latency, first.error) == (True, {"choice": "C", "reasoning": ""}, 4.5, "Choice: choose one of A, B, C, D.")
    assert (second.valid, second.error, third.error) == (False, TIMEOUT, TIMEOUT)
    assert outcome["final_choice"] == "C"  # the fallback of a timed-out turn keeps the previous choice


def test_timeout_applies_the_fallback_and_is_recorded(tmp_path):
    path = web_study(tmp_path, name="web_timeout", web={"time_limit": 1, "attention_checks": [], "quiz": []})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        p = Participant(server.url, "T1")
        p.enter()
        p.post("consent", agree="yes")
        p.post("instructions")
        first = p.until('id="turn-form"')
        assert "Time left" in first and 'name="alice_gain"' in first
        time.sleep(1.6)  # no answer: the offer times out, so Alice forfeits round 1
        page = p.until('name="decision"')
        assert "Round 2" in page
        seq = p.seq()
        p.post("play", seq=seq, decision="reject")
        p.past_results()
    store = Store(db)
    try:
        turns = store.turns("web_timeout")
        (game,) = store.games("web_timeout")
    finally:
        store.dispose()
    first = turns[0]
    assert (first["role"], first["phase"], first["valid"], first["error"], first["action"]) == ("alice", "offer", False, TIMEOUT, None)
    assert first["latency"] >= 1.0
    assert game["outcome"]["invalid_offers"] == 1 and game["outcome"]["agreed"] is False


def test_a_participant_who_leaves_is_abandoned_and_stored(tmp_path):
    """Issue 22 item 11: with no turn time limit, a participant who consents and closes the tab
    does not hold the game for ever: past the idle deadline the fallback plays their turns and
    the game is stored as ``abandoned``. (One who leaves before the play screen holds no game.)"""
    path = web_study(tmp_path, name="web_idle", web={"time_limit": 0, "idle_timeout": 0.5, "attention_checks": [], "quiz": []})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        p = Participant(server.url, "GONE1")
        p.enter()
        p.post("consent", agree="yes"), p.post("instructions")  # reaches the play screen, then leaves
        deadline = time.time() + 30
        while time.time() < deadline:
            store = Store(db)
            try:
                stored = store.games("web_idle")
            finally:
                store.dispose()
            if stored:  # stored once, already abandoned: no reader ever sees it 'done'
                break
            time.sleep(0.2)
        assert stored and stored[0]["status"] == "abandoned", stored
        assert "abandoned" in httpx.get(f"{server.url}/dash/games", headers={"Authorization": f"Bearer {TOKEN}"}).text


def test_live_games_are_capped_and_new_people_wait(tmp_path):
    """Issue 22 item 12: beyond ``max_live`` running games a new participant id opens no game."""
    path = web_study(tmp_path, name="web_cap", web={"max_live": 1, "attention_checks": [], "quiz": []})
    with AppServer(path, tmp_path / "web.db") as server:
        a = Participant(server.url, "CAP1")
        a.enter(), a.post("consent", agree="yes"), a.post("instructions")  # a's game runs from the play screen on
        r = httpx.get(f"{server.url}/start?PROLIFIC_PID=CAP2&STUDY_ID=s&SESSION_ID=x")
        assert r.status_code == 503 and "full" in r.text
        assert a.get(a.url).status_code == 200


# security ---------------------------------------------------------------------------------


def test_participants_see_only_their_own_game_and_forms_are_protected(tmp_path):
    path = web_study(tmp_path, name="web_sec", fixed={"money": 100, "horizon": 2, "complete_info": False, "delta_a": 0.9, "delta_b": 0.73}, web={"attention_checks": [], "quiz": []})
    with AppServer(path, tmp_path / "web.db") as server:
        a, b = Participant(server.url, "A1"), Participant(server.url, "B2")
        a.enter(), b.enter()
        a.post("consent", agree="yes"), a.post("instructions")
        b.post("consent", agree="yes"), b.post("instructions")
        a.until('id="turn-form"')
        # another participant's page by guessing or changing the token: not found
        for url in (a.url[:-1] + ("A" if a.url[-1] != "A" else "B"), "/p/1", "/p/" + "x" * 43, a.url + "x"):
            assert b.c.get(url).status_code == 404
            assert b.c.get(url + "/state").status_code == 404
        # b posting to a's session with b's own CSRF value: refused
        csrf_b = re.search(r'name="csrf" value="([^"]+)"', b.get(b.url).text).group(1)
        r = b.c.post(f"{a.url}/play", data={"csrf": csrf_b, "seq": "0", "alice_gain": "100", "bob_gain": "0"})
        assert r.status_code == 403
        # a's participant id entered again from another browser (no session cookie): refused
        other = httpx.Client(base_url=server.url, follow_redirects=True)
        assert other.get("/start?PROLIFIC_PID=A1").status_code == 409
        assert other.get("/start").status_code == 400
        # a replayed or stale turn is ignored, not played twice
        seq = a.seq()
        a.post("play", seq=seq, alice_gain="60", bob_gain="40")
        a.post("play", seq=seq, alice_gain="0", bob_gain="100")
        page = a.until('name="decision"')
        transcript, prompt = page.split('id="prompt"')
        assert "Amount Alice (you) receives: 60" in transcript and "receives: 0" not in transcript and "Alice receives: $0" in prompt
        # no byte served to a participant carries the hidden discount factor of the other side
        served = "\n".join(a.pages + b.pages)
        assert "10%" in served and "27%" not in served and "0.73" not in served and "73%" not in served
        assert "OPENAI" not in served and "api_key" not in served


def test_session_url_needs_its_cookie_and_redirects_are_relative(tmp_path):
    """Issue 22 item 13: a valid /p/<token> URL in another browser (a foreign or no cookie) is
    refused for the page, its state and its forms; the dashboard's redirect ignores Host."""
    path = web_study(tmp_path, name="web_cookie", fixed={"money": 100, "horizon": 2, "complete_info": False, "delta_a": 0.9, "delta_b": 0.9}, web={"attention_checks": [], "quiz": []})
    with AppServer(path, tmp_path / "web.db") as server:
        a, b = Participant(server.url, "C1"), Participant(server.url, "C2")
        a.enter(), b.enter()
        a.post("consent", agree="yes")
        csrf_a = re.search(r'name="csrf" value="([^"]+)"', a.get(a.url).text).group(1)
        for cookies in ({}, {"agora_session": b.url.rsplit("/", 1)[-1]}, {"agora_session": "x"}):
            stranger = httpx.Client(base_url=server.url, cookies=cookies)
            assert stranger.get(a.url).status_code == 403
            assert stranger.get(a.url + "/state").status_code == 403
            assert stranger.post(a.url + "/instructions", data={"csrf": csrf_a}).status_code == 403
        assert a.get(a.url).status_code == 200  # the owner still plays
        r = httpx.Client(base_url=server.url, headers={"Host": "evil.example"})
        moved = r.get(f"/dash?token={TOKEN}")
        assert moved.status_code == 303 and moved.headers["location"] == "/dash"


def test_dashboard_needs_its_token(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-h12-never-shown-0123456789")
    path = web_study(tmp_path, name="web_dash", seats=[{"alice": "participant", "bob": "opponent"}, {"alice": "spe", "bob": "opponent"}], models=[{"name": "opponent", "spec": "strategy/always-reject"}, {"name": "spe", "spec": "strategy/spe"}], web={"attention_checks": [], "quiz": [], "completion_code": "", "bonus": "0.5 + 0.01 * alice_gain"})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        anon = httpx.Client(base_url=server.url)
        for url in ("/dash", "/dash/games", "/dash/game/x", "/dash/report", "/dash/bonus.csv", "/dash/bonus-prolific.txt"):
            assert anon.get(url).status_code == 401
            assert anon.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert anon.post("/dash/run", data={"csrf": "x"}).status_code == 401
        # a participant plays to the end
        p = Participant(server.url, "D1")
        p.enter(), p.post("consent", agree="yes"), p.post("instructions")
        p.post("play", seq=p.seq(), alice_gain="60", bob_gain="40")
        p.post("play", seq=p.seq(), decision="accept")
        p.past_results()
        p.post("questionnaire", a_why="because", a_fair="3")
        done = p.get(p.url).text
        code = re.search(r'id="code">([0-9A-F]+)<', done).group(1)
        # the researcher: the token once in the URL becomes a cookie
        r = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        home = r.get(f"/dash?token={TOKEN}")
        assert home.status_code == 200 and "web_dash" in home.text and "questionnaire" not in home.text and "done" in home.text
        assert "token=" not in str(home.url)
        csv = r.get("/dash/bonus.csv").text.splitlines()
        assert csv == ["participant,source,completion_code,bonus", f"D1,prolific,{code},0.50"]  # alice got 0: Bob's offer gave her nothing
        assert r.get("/dash/bonus-prolific.txt").text == "D1,0.50\n"  # Prolific's bulk bonus box: ID,amount, no header
        assert '<td class="status">done</td>' in r.get("/dash").text
        games = r.get("/dash/games?status=done&model=human").text
        (game_id,) = re.findall(r'href="/dash/game/([0-9a-f]+)"', games)
        viewer = r.get(f"/dash/game/{game_id}").text
        assert viewer.count('class="turn-row"') == 4 and "human:" in viewer and "alice_gain" in viewer
        shown = [int(n) for n in re.findall(r"<summary>(\d+) messages</summary>", viewer)]
        assert len(shown) == 4 and all(n > 0 for n in shown), shown  # each turn's new prompt messages
        info = viewer[viewer.index('id="game-info"') : viewer.index("</table>")]
        assert "<details open><summary>outcome" in info and not re.search(r"\d\.\d{5,}", info)  # outcome open, numbers rounded
        # start the model-only game from the dashboard (spe vs always-reject)
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.get("/dash").text).group(1)
        assert r.post("/dash/run", data={"csrf": "wrong"}).status_code == 403
        assert r.post("/dash/run", data={"csrf": csrf}).status_code == 200
        deadline = time.time() + 20
        while "last model-only run: 1 played" not in r.get("/dash").text:
            assert time.time() < deadline
            time.sleep(0.1)
        report = r.get("/dash/report").text
        assert "human:" in report and "spe" in report
        everything = home.text + "".join(r.get(u).text for u in ("/dash", "/dash/games", f"/dash/game/{game_id}", "/dash/bonus.csv", "/dash/report"))
        assert "sk-h12-never-shown" not in everything
    # the transcript viewer on a database alone (no study served)
    with AppServer(None, db) as viewer_only:
        r = httpx.Client(base_url=viewer_only.url, headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.get("/dash/games").text.count('href="/dash/game/') == 2
        assert "human:" in r.get(f"/dash/game/{game_id}").text
        assert r.get("/start?participant=z").status_code == 404
        assert httpx.get(viewer_only.url + "/dash").status_code == 401


def test_runner_skips_human_seats_and_serve_needs_them(tmp_path):
    from agorabench.core.runner import run_study

    path = web_study(tmp_path, name="web_run", seats=[{"alice": "participant", "bob": "opponent"}, {"alice": "opponent", "bob": "opponent"}])
    stats, _ = run_study(load_study(path), tmp_path / "r.db", progress=False)
    assert (stats.total, stats.skipped, stats.done, stats.errors) == (1, 0, 1, 0)  # the human game is left to `agora serve`
    no_human = web_study(tmp_path, name="web_none", seats=[{"alice": "opponent", "bob": "opponent"}])
    from support.helpers import run_agora

    out = run_agora("serve", str(no_human), "--db", str(tmp_path / "n.db"), "--port", "1")
    assert out.returncode == 2 and out.stderr.strip() == "agora: error: study 'web_none' has no game with a human seat (a model with spec = \"human\")"


def test_no_model_is_called_before_the_participant_reaches_the_play_screen(tmp_path, fake_openai):
    """Issue 22 item 12: a made-up id that consents and leaves costs no model call (500 such ids
    once triggered 125 calls): the game starts at the play screen."""
    import json
    import urllib.request

    url, stats = fake_openai()
    calls = lambda: json.load(urllib.request.urlopen(stats))["requests"]  # noqa: E731
    models = [{"name": "opponent", "spec": "openai/fake", "base_url": url}]
    path = web_study(tmp_path, name="web_calls", seats=[{"alice": "opponent", "bob": "participant"}], models=models, web={"attention_checks": [], "quiz": []})
    with AppServer(path, tmp_path / "web.db") as server:
        for i in range(5):
            p = Participant(server.url, f"LEAVER{i}")
            p.enter(), p.post("consent", agree="yes")
            assert "instructions" in p.get(p.url).text.lower()
        time.sleep(1.0)
        assert calls() == 0
        stayer = Participant(server.url, "STAYER")
        stayer.enter(), stayer.post("consent", agree="yes"), stayer.post("instructions")
        deadline = time.time() + 30
        while calls() == 0 and time.time() < deadline:  # Alice (the model) opens the game
            time.sleep(0.2)
        assert calls() > 0


def test_new_sessions_are_rate_limited_per_client_and_ids_checked(tmp_path):
    """Issue 22 item 12: a client address opens at most ``starts_per_minute`` new sessions; ids
    must match ``participant_pattern`` and, if given, the allow-list."""
    web = {"attention_checks": [], "quiz": [], "starts_per_minute": 3, "participant_pattern": "[0-9a-f]{6}"}
    path = web_study(tmp_path, name="web_flood", web=web)
    with AppServer(path, tmp_path / "web.db") as server:
        start = lambda pid: httpx.get(f"{server.url}/start?PROLIFIC_PID={pid}&STUDY_ID=s&SESSION_ID=x")  # noqa: E731
        r = start("not-hex")
        assert r.status_code == 403 and "not admitted" in r.text
        assert [start(f"{i:06x}").status_code for i in range(3)] == [303, 303, 303]
        r = start("abcdef")
        assert r.status_code == 429 and "Too many new sessions" in r.text
    listed = web_study(tmp_path, name="web_allow", web={"attention_checks": [], "quiz": [], "allowed_participants": ["OK1"]})
    with AppServer(listed, tmp_path / "allow.db") as server:
        assert httpx.get(f"{server.url}/start?PROLIFIC_PID=NOPE").status_code == 403
        assert httpx.get(f"{server.url}/start?PROLIFIC_PID=OK1").status_code == 303


def test_dashboard_rounds_floats_for_reading():
    from agorabench.web.dashboard import _rounded

    assert _rounded({"efficiency": 0.123456789, "turns": [1.00000004, 2], "who": "alice"}) == {"efficiency": 0.1235, "turns": [1.0, 2], "who": "alice"}


def test_dashboard_says_what_happened_to_each_participant():
    from agorabench.web.dashboard import participant_status

    assert participant_status({"stage": "done", "game_status": "declined"}) == "declined"  # not "done" like a completer
    assert participant_status({"stage": "done", "game_status": "done"}) == "done"
    assert participant_status({"stage": "questionnaire", "game_status": "abandoned"}) == "abandoned"
    assert participant_status({"stage": "play", "game_status": None}) == "playing"
    assert participant_status({"stage": "quiz", "game_status": None}) == "quiz"
