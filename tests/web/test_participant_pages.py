"""What participants see (issue 23, items 1-4), over HTTP: a results page that says what happened
and how the bonus follows from the study's rule; a progress line on every page; forms that keep
what was typed and speak the participant's words; the quiz naming the wrong question; a resume
link from the dashboard as the way back in from another browser."""

from __future__ import annotations

import re

import httpx

from support.web import TOKEN, AppServer, Participant, web_study

ACCEPTING = [{"name": "opponent", "spec": "strategy/always-accept"}]


def _to_play(p: Participant, quiz: str = "Yes") -> None:
    p.enter()
    p.post("consent", agree="yes")
    p.post("instructions")
    p.post("quiz", q0=quiz)


def test_results_page_states_the_outcome_and_the_bonus_computation(tmp_path):
    path = web_study(tmp_path, name="web_results", models=ACCEPTING, web={"bonus": "0.02 * alice_gain", "attention_checks": []})
    with AppServer(path, tmp_path / "w.db") as server:
        p = Participant(server.url, "R1")
        _to_play(p)
        p.post("play", seq=p.seq(), alice_gain="60", bob_gain="40")
        results = p.past_results()
        done = p.post("questionnaire", a_why="ok", a_fair="3").text
    text = re.sub(r"<[^>]+>", "", results)
    assert "You and Bob agreed in round 1: you receive $60 and Bob receives $40." in text
    # the rule in words and money, never its code names
    assert "You earn 2 cents for every point of your gain. Your gain was 60, so your bonus is $1.20" in text and "alice_gain" not in text
    assert 'id="bonus">$1.20' in results and "$1.20" in done


def test_an_unfinished_game_earns_no_bonus_and_says_why(tmp_path):
    path = web_study(tmp_path, name="web_nodeal", web={"bonus": "0.02 * alice_gain", "attention_checks": []})
    with AppServer(path, tmp_path / "w.db") as server:
        p = Participant(server.url, "R2")
        _to_play(p)
        p.post("play", seq=p.seq(), alice_gain="60", bob_gain="40")  # always-reject Bob
        p.post("play", seq=p.seq(), decision="reject")
        text = re.sub(r"<[^>]+>", "", p.past_results())
    assert "No proposal was accepted in 2 rounds" in text
    assert "Your bonus depends on your gain, which your game did not record, so it is $0.00." in text and "alice_gain" not in text


def test_every_page_says_which_step_it_is(tmp_path):
    path = web_study(tmp_path, name="web_steps", models=ACCEPTING, web={"attention_checks": []})
    with AppServer(path, tmp_path / "w.db") as server:
        p = Participant(server.url, "S1")
        seen = [p.enter().text]
        seen.append(p.post("consent", agree="yes").text)
        seen.append(p.post("instructions").text)
        seen.append(p.post("quiz", q0="Yes").text)
        p.post("play", seq=p.seq(), alice_gain="50", bob_gain="50")
        seen.append(p.until('id="submit-results"'))
        seen.append(p.post("results").text)
        seen.append(p.post("questionnaire", a_why="ok", a_fair="3").text)
    steps = [re.search(r"Step (\d+) of (\d+): ([^<]+)", page).groups() for page in seen]
    assert [int(n) for n, _, _ in steps] == [1, 2, 3, 4, 5, 6, 7]
    assert {of for _, of, _ in steps} == {"7"} and steps[4][2] == "Your result"
    assert all('rel="icon"' in page for page in seen)  # no favicon request that 404s


def test_a_refused_form_keeps_the_values_and_speaks_the_participants_words(tmp_path):
    path = web_study(tmp_path, name="web_form", web={"attention_checks": []})
    with AppServer(path, tmp_path / "w.db") as server:
        p = Participant(server.url, "F1")
        _to_play(p)
        first = p.until('id="turn-form"')
        assert "Amount Alice (you) receives" in first and "The two amounts must add up to $100." in first
        page = p.post("play", seq=p.seq(), alice_gain="70", bob_gain="35").text  # the errors are shown once
    assert 'name="alice_gain" step="any" min="0" required value="70"' in page and 'value="35"' in page
    errors = re.search(r'<ul class="error" id="form-errors"[^>]*>(.*?)</ul>', page, re.S).group(1)
    assert "Amount Alice (you) receives and amount Bob receives must add up to $100" in errors
    assert "alice_gain" not in errors


def test_the_quiz_names_the_question_that_was_wrong(tmp_path):
    quiz = [{"question": "First?", "options": ["a", "b"], "answer": "a"}, {"question": "Second?", "options": ["a", "b"], "answer": "b"}]
    path = web_study(tmp_path, name="web_quiz", web={"quiz": quiz, "attention_checks": []})
    with AppServer(path, tmp_path / "w.db") as server:
        p = Participant(server.url, "Q1")
        p.enter()
        p.post("consent", agree="yes")
        p.post("instructions")
        page = p.post("quiz", q0="a", q1="a").text
    assert "1 answer was not right: question 2." in page and 'id="wrong-1"' in page and 'id="wrong-0"' not in page


def test_a_resume_link_from_the_dashboard_lets_a_participant_go_on_elsewhere(tmp_path):
    path = web_study(tmp_path, name="web_resume_link", web={"attention_checks": []})
    with AppServer(path, tmp_path / "w.db") as server:
        a = Participant(server.url, "M1")
        _to_play(a)
        a.seq()
        token = a.url.rsplit("/", 1)[-1]
        # the same id in another browser is refused, and told to ask for a resume link
        other = Participant(server.url, "M1")
        refused = other.enter()
        assert refused.status_code == 409 and "resume link" in refused.text
        dash = httpx.Client(base_url=server.url, follow_redirects=True)
        overview = dash.get(f"/dash?token={TOKEN}").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', overview).group(1)
        assert f'action="/dash/resume/{token}"' in overview
        issued = dash.post(f"/dash/resume/{token}", data={"csrf": csrf}).text
        link = re.search(r'id="resume-link" value="([^"]+)"', issued).group(1)
        assert link.startswith(server.url + "/resume/")
        fresh = httpx.Client(follow_redirects=True)
        page = fresh.get(link)
        assert page.status_code == 200 and str(page.url).endswith(f"/p/{token}") and 'id="turn-form"' in page.text
        assert fresh.get(link).status_code == 403  # once only
        assert httpx.get(link.replace("/resume/", "/resume/x")).status_code == 403
