"""Issue 30 item 7 in a real browser (Debian's chromium via Playwright): a commons group of two
people and three scripted players, the people matched in the waiting room (whose page moves on
by itself when the group is formed), each playing their own seat to the end in their own
browser context, and a lone participant's waiting page giving way to a game with the fallback."""

from __future__ import annotations

import time

from agorabench.store.participants import Participants
from agorabench.store.store import Store
from support.browser_reuse import person, person_context  # noqa: F401  (fixtures)
from support.web import AppServer, browser, fill_turn, study_text, submit  # noqa: F401  (browser: fixture)

COMMONS_POLICY = lambda f, prompt, opts: {"amount": "3", "message": "Let us each take a little.", "proposed_limit": "4"}.get(f)  # noqa: E731


def _enter(page, base: str, pid: str) -> None:
    page.goto(f"{base}/start?PROLIFIC_PID={pid}&STUDY_ID=st&SESSION_ID=se")
    submit(page, "#agree")
    submit(page, "#continue")


def _step(page, seen: dict) -> bool | None:
    """Do what the page asks, if anything: True once the participant reached the questionnaire,
    None when the page asks nothing (it waits for the others), False after an answer. A page
    that reloads itself meanwhile (it polls for the other players' moves) counts as changed, so
    it is looked at again at the next step."""
    from playwright.sync_api import Error

    try:
        return _act(page, seen)
    except Error as exc:
        if "context was destroyed" in str(exc) or "navigation" in str(exc).lower():
            return False
        raise


#: What :func:`_act` reads of a page in one call (each call to the browser costs about as much as
#: a small page): by id, the element's text (None: not there).
_HERE = """() => Object.fromEntries(['submit-questionnaire', 'submit-attention', 'submit-results', 'result', 'turn-form', 'prompt']
  .map(id => { const e = document.getElementById(id); return [id, e ? e.innerText : null]; }))"""


def _act(page, seen: dict) -> bool | None:
    here = page.evaluate(_HERE)
    if here["submit-questionnaire"] is not None:
        return True
    if here["submit-attention"] is not None:
        page.check("input[name='answer'][value='Blue']")
        submit(page, "#submit-attention")
        seen["attention"] += 1
    elif here["submit-results"] is not None:
        assert here["result"] is not None, page.inner_text("body")[:1500]
        seen["result"] = here["result"]
        submit(page, "#submit-results")
    elif here["turn-form"] is not None:
        prompt = here["prompt"] or ""
        fill_turn(page, COMMONS_POLICY)
        submit(page, "#submit-turn")
        seen["turns"] += 1
        seen["prompts"].append(prompt)
        page.wait_for_load_state()
    else:
        return None
    return False


def _play_both(p1, p2, seen: dict, timeout: float = 180) -> None:
    """Both people play until each reached the questionnaire. A page is looked at after each of
    its loads (an answer's page, or a reload by its own polling when the others moved) and after
    each answer given on it, and both at least once a second whatever happened; not ten times a
    second each, when a look costs chromium about as much as a small page."""
    changed = {p1, p2}

    def loaded(page) -> None:
        changed.add(page)

    for p in (p1, p2):
        p.on("load", loaded)
    finished: set = set()
    deadline = time.time() + timeout
    last_look = time.time()
    try:
        while len(finished) < 2:
            assert time.time() < deadline, f"the group game did not end: {[p.inner_text('body')[:300] for p in (p1, p2)]}"
            if time.time() - last_look >= 1.0:
                changed.update((p1, p2))
            if changed - finished:
                last_look = time.time()
            for p in (p1, p2):
                if p in finished or p not in changed:
                    continue
                changed.discard(p)
                state = _step(p, seen[p])
                if state is True:
                    finished.add(p)
                elif state is False:  # answered, or the page moved under the look: look again
                    changed.add(p)
            if not changed - finished:
                p1.wait_for_timeout(100)
    finally:
        for p in (p1, p2):
            p.remove_listener("load", loaded)


def test_a_commons_group_of_two_people_and_three_models(browser, person, tmp_path):
    path = tmp_path / "study.toml"
    seats = [{"agent_0": "participant", "agent_1": "participant", "*": "opponent"}]
    fixed = {"n_agents": 5, "months": 2, "max_conversation_steps": 2}
    web = {"quiz": [], "group_wait": 120, "group_fallback": "opponent", "bonus": "1"}
    path.write_text(study_text("web_group_commons", "commons", seats, fixed, [{"name": "opponent", "spec": "strategy/sustainable"}], web))
    db = tmp_path / "web.db"
    second = browser.new_context(reduced_motion="reduce")  # two people, two browsers: the module's page is the first's
    try:
        with AppServer(path, db) as server:
            p1, p2 = person, second.new_page()
            _enter(p1, server.url, "GROUP1")
            p1.wait_for_selector("#group-waiting")
            assert "120 seconds" in p1.inner_text("#group-wait-limit")
            time.sleep(1.0)
            assert p1.query_selector("#group-waiting"), "the waiting page stays until the group is complete"
            _enter(p2, server.url, "GROUP2")
            # the first participant's page leaves the waiting room by itself (it polls /state)
            p1.wait_for_selector("#turn-form, #thinking", timeout=15_000)
            assert not p1.query_selector("#group-waiting")
            seen = {p: {"turns": 0, "attention": 0, "prompts": [], "result": ""} for p in (p1, p2)}
            _play_both(p1, p2, seen)
            for p in (p1, p2):
                p.fill("textarea[name='a_why']", "It seemed sensible.")
                p.check("input[name='a_fair'][value='4']")
                submit(p, "#submit-questionnaire")
                assert p.inner_text("#bonus") == "$1.00"
    finally:
        second.close()
    store = Store(db)
    try:
        rows = {r["role"]: r for r in Participants(store).of_study("web_group_commons")}
        assert set(rows) == {"agent_0", "agent_1"} and rows["agent_0"]["game_id"] == rows["agent_1"]["game_id"]
        game = store.game(rows["agent_0"]["game_id"])
        turns = store.turns(game_id=game["id"])
    finally:
        store.dispose()
    assert game["status"] == "done"
    assert game["seats"]["agent_0"] == f"human:{rows['agent_0']['pid_hash']}" and game["seats"]["agent_1"] == f"human:{rows['agent_1']['pid_hash']}"
    assert [game["seats"][f"agent_{i}"] for i in (2, 3, 4)] == ["opponent"] * 3
    for role, p in (("agent_0", p1), ("agent_1", p2)):
        mine = [t for t in turns if t["role"] == role]
        assert seen[p]["turns"] == len(mine) and [t["phase"] for t in mine].count("harvest") == 2  # two months, each person's own harvests
        assert all(t["valid"] and t["latency"] > 0 for t in mine)
        assert seen[p]["attention"] == 1 and rows[role]["attention"][0]["passed"]
        assert rows[role]["game_status"] == "done" and rows[role]["bonus"] == 1.0 and rows[role]["group_info"]["fallback"] == {}
        assert all(x.strip() for x in seen[p]["prompts"]) and seen[p]["result"].strip()


def test_a_lone_participant_waits_then_plays_with_the_fallback(person, tmp_path):
    path = tmp_path / "study.toml"
    seats = [{"alice": "participant", "bob": "participant"}]
    web = {"quiz": [], "attention_checks": [], "group_wait": 2, "group_fallback": "strategy/always-reject"}
    path.write_text(study_text("web_group_lone", "glee.bargaining", seats, {"money": 100, "horizon": 2}, [{"name": "spe", "spec": "strategy/spe"}], web))
    db = tmp_path / "web.db"
    page = person
    with AppServer(path, db) as server:
        _enter(page, server.url, "ALONE")
        page.wait_for_selector("#group-waiting")
        started = time.time()
        page.wait_for_selector("input[name='alice_gain']", timeout=15_000)  # no reload by hand
        assert time.time() - started >= 1.0
        page.fill("input[name='alice_gain']", "60")
        page.fill("input[name='bob_gain']", "40")
        submit(page, "#submit-turn")
        page.wait_for_selector("input[name='decision']")
        page.check("input[name='decision'][value='reject']")
        submit(page, "#submit-turn")
        page.wait_for_selector("#submit-results")
        assert "the computer played the missing parts" in page.inner_text("#result")
    store = Store(db)
    try:
        (row,) = Participants(store).of_study("web_group_lone")
        game = store.game(row["game_id"])
    finally:
        store.dispose()
    assert game["status"] == "done" and game["seats"]["bob"] == "strategy/always-reject"
    assert row["group_info"]["fallback"] == {"bob": "strategy/always-reject"} and row["group_info"]["waited"] >= 2


def test_a_page_sending_its_form_does_not_reload_itself(browser, person, tmp_path):
    """A page that polls (here the waiting room) reloads itself when the game moves on, unless a
    form of it is being sent: that reload would cut the form's own navigation short. The first
    person's page begins sending; the second person completes the group; the first page stays
    as it is, and a reload by hand shows the game."""
    path = tmp_path / "study.toml"
    seats = [{"alice": "participant", "bob": "participant"}]
    web = {"quiz": [], "attention_checks": [], "group_wait": 120, "group_fallback": "strategy/always-reject"}
    path.write_text(study_text("web_group_sending", "glee.bargaining", seats, {"money": 100, "horizon": 2}, [{"name": "spe", "spec": "strategy/spe"}], web))
    second = browser.new_context(reduced_motion="reduce")  # the first person's is the module's page
    try:
        with AppServer(path, tmp_path / "web.db") as server:
            p1, p2 = person, second.new_page()
            _enter(p1, server.url, "SENDING1")
            p1.wait_for_selector("#group-waiting")
            p1.evaluate("() => { window.__sameDocument = true; document.dispatchEvent(new Event('submit')); }")
            _enter(p2, server.url, "SENDING2")  # the group is complete: the game starts
            p2.wait_for_selector("#turn-form, #thinking", timeout=15_000)
            p1.wait_for_timeout(2_500)  # the page polls every 0.7 s
            assert p1.evaluate("() => window.__sameDocument === true") and p1.query_selector("#group-waiting")
            p1.reload()
            p1.wait_for_selector("#turn-form, #thinking", timeout=15_000)
    finally:
        second.close()
