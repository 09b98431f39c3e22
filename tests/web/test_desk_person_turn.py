"""Issue 41 item 11 in a real browser (Debian's chromium via Playwright, the app served on
127.0.0.1): the desk shows a person's turn as the person saw it (what they read, in their words,
and the values they filled in, with the form's labels, money written as the pages write it), not
the JSON a model reads and writes; the transcript fits a phone's 390 px with a long unbroken word
in it; the participants' bonuses are money."""

from __future__ import annotations

import re

import httpx

from support.web import TOKEN, AppServer, Participant, browser, web_study  # noqa: F401  (browser: fixture)

LONG = "Fair" + "x" * 90  # one word wider than a phone


def test_a_persons_turn_reads_as_they_saw_it_and_fits_a_phone(browser, tmp_path):
    path = web_study(tmp_path, name="desk_person", fixed={"money": 1250, "horizon": 2, "messages": True}, web={"attention_checks": [], "quiz": [], "bonus": "0.5"})
    with AppServer(path, tmp_path / "d.db") as server:
        p = Participant(server.url, "DESK1")
        p.enter(), p.post("consent", agree="yes"), p.post("instructions")
        p.post("play", seq=p.seq(), alice_gain="1000.5", bob_gain="249.5", message=f"{LONG} split.")
        p.post("play", seq=p.seq(), decision="reject")  # Bob (always reject) offered nothing
        p.past_results()
        games = httpx.get(f"{server.url}/dash/games", headers={"Authorization": f"Bearer {TOKEN}"}).text
        (game_id,) = re.findall(r'href="/dash/game/([0-9a-f]+)"', games)
        for width in (390, 1280):
            context = browser.new_context(viewport={"width": width, "height": 800})
            page = context.new_page()
            try:
                page.goto(f"{server.url}/dash/game/{game_id}?token={TOKEN}")
                assert page.evaluate("document.documentElement.scrollWidth") <= width
                offer, respond = page.query_selector_all("#turns tr[data-person=alice]")
                read, answer = offer.query_selector(".person-read"), offer.query_selector(".person-answer")
                # what Alice read: the game's words for people, no answer format for a model
                assert "It is your turn to propose how to split $1,250 between you and Bob" in read.inner_text()
                # what she filled in: the form's labels, money as the pages write it, her message
                lines = [x.inner_text() for x in answer.query_selector_all(".answer-line")]
                assert lines == ["Amount Alice (you) receives: $1,000.50", "Amount Bob receives: $249.50", f"Your message to the other player: {LONG} split."]
                assert [x.inner_text() for x in respond.query_selector_all(".answer-line")] == ["Decision: reject"]
                assert "answered after" in offer.inner_text() and "none (a person)" in offer.inner_text()
                for row in (offer, respond):
                    shown = row.inner_text()  # what the researcher sees (the stored record stays folded)
                    assert not re.search(r"[{}]|JSON|alice_gain", shown), shown
                    assert row.query_selector("details.stored:not([open])") is not None
                # Bob's turns are a program's: shown as stored, raw reply and parsed action
                assert "{" in page.inner_text("#turns tr.turn-row:not([data-person])")
                if width == 390:  # a phone: each turn is a card, every cell under its label
                    assert offer.query_selector(".person-answer").evaluate("e => getComputedStyle(e, '::before').content") == '"the person answered: "'
                page.goto(f"{server.url}/dash")
                assert page.inner_text("#participants td.bonus") == "$0.50"
            finally:
                context.close()


def test_a_dropouts_turns_say_the_computer_answered_for_them(tmp_path):
    """A group member who stops answering: their first unanswered turn reads "no answer in time",
    the later ones "played by the computer"; the one who stayed reads as they answered (and was
    told, on their pages, that the computer plays the other's part from then on)."""
    web = {"attention_checks": [], "quiz": [], "starts_per_minute": 0, "group_fallback": "spe", "group_wait": 60, "idle_timeout": 1.5}
    path = web_study(tmp_path, name="desk_dropout", seats=[{"alice": "participant", "bob": "participant"}], models=[{"name": "spe", "spec": "strategy/spe"}], web=web)
    with AppServer(path, tmp_path / "d.db") as server:
        a, b = Participant(server.url, "DSTAYS"), Participant(server.url, "DLEAVES")
        for p in (a, b):
            p.enter(), p.post("consent", agree="yes"), p.post("instructions")
        a.post("play", seq=a.seq(), alice_gain="99", bob_gain="1")
        b.until('id="turn-form"')  # Bob sees the offer and goes
        # the computer rejected for Bob and made his offer: Alice decides, told once what happened
        told = a.until('id="taken-over"')
        assert "The other participant did not answer in time, so the computer answered for them and will play their part from now on." in told
        a.post("play", seq=a.seq(), decision="accept")
        a.past_results()
        dash = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        (game_id,) = re.findall(r'href="/dash/game/([0-9a-f]+)"', dash.get("/dash/games").text)
        page = dash.get(f"/dash/game/{game_id}").text
    rows = re.findall(r'<tr class="turn-row" data-person="(\w+)".*?</tr>', page, re.S)
    bodies = re.findall(r'<tr class="turn-row" data-person="\w+".*?</tr>', page, re.S)
    assert rows == ["alice", "bob", "bob", "alice"]
    assert '<p class="how">no answer in time: the computer answered for them</p>' in bodies[1] and "Decision: reject" in bodies[1]
    assert '<p class="how">played by the computer: the person had stopped answering</p>' in bodies[2]
    assert re.search(r'<div class="text answer-line">Alice gain: \$[\d,]+\.\d\d</div>', bodies[2])
    assert "Decision: accept" in bodies[3] and "answered after" in bodies[3]
