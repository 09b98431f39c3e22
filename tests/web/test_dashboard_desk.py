"""The researcher's desk (issue 30, item 9; issue 31): each participant's external id beside the
pseudonym and a search over both, an abandoned game counted apart from failed ones, the decline
page's return link and no-consent code, and the study's spend so far beside the plan's estimate,
checked against what the store holds. Real SQLite, the app served by uvicorn on 127.0.0.1, the
loopback OpenAI-compatible server for a priced model."""

from __future__ import annotations

import asyncio
import html
import re
import sqlite3
import time

import httpx
import pytest

from agorabench.core.plan import build_plan
from agorabench.core.study import StudyError, load_study
from agorabench.records import TurnRecord
from agorabench.store.store import Store
from agorabench.web.participants import pid_hash
from agorabench.web.settings import web_settings
from support.web import TOKEN, AppServer, Participant, study_text, web_study

PLAIN = {"attention_checks": [], "quiz": []}


def dash(server: AppServer) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)


def participant_rows(page: str) -> list[str]:
    table = page.split('id="participants"')[1].split("</table>")[0]
    return re.findall(r'<tr class="participant".*?</tr>', table, re.S)


def cells(row: str) -> dict[str, str]:
    """A table row's cells by their class."""
    return {k: html.unescape(v) for k, v in re.findall(r'<td data-label="[^"]*" class="([\w-]+)"(?: colspan="\d+")?>([^<]*)</td>', row)}


def spend_rows(page: str) -> dict[str, dict[str, str]]:
    """The spend table: model (or ``total``) -> its cells by class."""
    table = page.split('id="spend"')[1].split("</table>")[0]
    out = {}
    for row in re.findall(r'<tr class="spend-(?:model|total)">(.*?)</tr>', table, re.S):
        c = cells(row)
        out[c["model"]] = c
    return out


def wait_for_estimate(client: httpx.Client, timeout: float = 60) -> str:
    deadline = time.time() + timeout
    while True:
        page = client.get("/dash").text
        if "The estimate is being computed" not in page:
            return page
        assert time.time() < deadline, "the estimate never came"
        time.sleep(0.1)


def test_participants_show_their_external_id_and_can_be_searched(tmp_path):
    path = web_study(tmp_path, name="desk_ids", web=PLAIN)
    with AppServer(path, tmp_path / "d.db") as server:
        alpha, beta = Participant(server.url, "ALPHA5f00d"), Participant(server.url, "beta77")
        alpha.enter(), beta.enter()
        worker = httpx.Client(base_url=server.url, follow_redirects=True)
        worker.get("/start?workerId=A1TURKER9&assignmentId=x&hitId=y")
        client = dash(server)
        page = client.get("/dash").text
        rows = participant_rows(page)
        assert len(rows) == 3
        h_alpha, h_beta = pid_hash("desk_ids", "alpha5f00d"), pid_hash("desk_ids", "beta77")
        (row_a,) = [r for r in rows if "ALPHA5f00d" in r]
        # the id as the platform gave it (case kept), its source and the pseudonym, the full
        # texts in titles where the cell cuts them
        assert 'title="ALPHA5f00d"' in row_a and f'title="human:{h_alpha}"' in row_a and ">prolific<" in row_a
        assert any("A1TURKER9" in r and ">mturk<" in r for r in rows)
        # server-side search: by id (any case, a part of it), by pseudonym with or without "human:"
        for query, expected in [("alpha5F", "ALPHA5f00d"), (f"human:{h_beta}", "beta77"), (h_beta[:7], "beta77"), ("mturk", "A1TURKER9")]:
            found = participant_rows(client.get("/dash", params={"q": query}).text)
            assert len(found) == 1 and expected in found[0], (query, found)
        none = client.get("/dash", params={"q": "nobody-like-this"}).text
        assert participant_rows(none) == [] and "0 of 3 participants match" in none
        # the search box keeps the query, and the resume link of the row found is that person's
        found = client.get("/dash", params={"q": "ALPHA"}).text
        assert 'id="participant-filter" value="ALPHA"' in found
        token_alpha = alpha.url.rsplit("/", 1)[1]
        assert f'action="/dash/resume/{token_alpha}"' in participant_rows(found)[0]
        assert beta.url.rsplit("/", 1)[1] not in found
        # pausing the refresh keeps the search
        assert 'href="/dash?refresh=0&amp;q=ALPHA"' in found
        # markup in a query is text, never markup
        odd = client.get("/dash", params={"q": '"><script>x</script>'}).text
        assert "<script>x" not in odd


def test_an_abandoned_game_is_counted_as_abandoned_not_failed(tmp_path):
    db = tmp_path / "a.db"
    store = Store(db)
    try:
        for gid, status in [("g1", "done"), ("g2", "done"), ("g3", "error"), ("g4", "abandoned"), ("g5", "abandoned"), ("g6", "abandoned")]:
            store.save_game(id=gid, study="counted", game="x", config={}, seats={"a": "m"}, repeat=0, seed=1, prompt_version="1", status=status, outcome={}, metrics={}, error=None, turn_records=[])
    finally:
        store.dispose()
    with AppServer(None, db) as server:
        page = dash(server).get("/dash").text
    row = page.split('id="progress"')[1].split("</table>")[0].split("counted</a></td>")[1].split("</tr>")[0]
    assert '<td data-label="done">2</td>' in row
    assert '<td data-label="failed" class="failed">1</td>' in row
    assert '<td data-label="abandoned" class="abandoned">3</td>' in row


def test_a_decliner_gets_the_return_link_and_the_no_consent_code(tmp_path):
    web = {**PLAIN, "decline_code": "NOCONSENT", "decline_url": "https://app.prolific.example/submissions/complete?cc={code}"}
    path = web_study(tmp_path, name="desk_decline", web=web)
    with AppServer(path, tmp_path / "n.db") as server:
        p = Participant(server.url, "DECL1")
        p.enter()
        answer = p.post("consent", agree="no").text
        again = p.get(p.url).text  # the page they see when they come back
        for page in (answer, again):
            assert 'id="decline-code">NOCONSENT<' in page
            assert 'href="https://app.prolific.example/submissions/complete?cc=NOCONSENT" id="decline-return"' in page
            assert "You did not consent" in page
        rows = participant_rows(dash(server).get("/dash").text)
        assert '<td class="status">declined</td>' in rows[0]
    # without the settings the page only thanks them, as before
    plain = web_study(tmp_path, name="desk_decline_plain", web=PLAIN)
    with AppServer(plain, tmp_path / "m.db") as server:
        p = Participant(server.url, "DECL2")
        p.enter()
        page = p.post("consent", agree="no").text
        assert "You may close this page." in page and "decline-code" not in page and "decline-return" not in page


def test_a_decline_url_that_is_no_web_address_is_refused_in_one_line(tmp_path):
    path = web_study(tmp_path, name="desk_bad_url", web={**PLAIN, "decline_url": "javascript:alert(1)"})
    with pytest.raises(StudyError, match=r"web\.decline_url: .*not a web address"):
        web_settings(load_study(path))


def _turn(idx: int, role: str, prompt: int, completion: int, cost: float, cached: bool = False, reasoning: int | None = None) -> TurnRecord:
    return TurnRecord(index=idx, role=role, phase="p", messages=[{"role": "user", "content": f"q{idx}"}], raw="a", action=None, valid=True, retries=0, error=None,
                      prompt_tokens=prompt, completion_tokens=completion, cost=cost, latency=0.1, cached=cached, reasoning_tokens=reasoning)


def test_spend_per_model_counts_bought_calls_with_reasoning_tokens(tmp_path):
    """Stored turns of two models in several seatings: each model's calls, tokens and cost are
    summed over the turns not answered from the cache; scripted turns cost nothing."""
    models = [{"name": "opponent", "spec": "strategy/always-reject"},
              {"name": "thinker", "spec": "openai/thinker", "base_url": "http://127.0.0.1:9/v1", "price_input": 1.0, "price_output": 4.0},
              {"name": "plain", "spec": "openai/plain", "base_url": "http://127.0.0.1:9/v1"}]
    path = tmp_path / "desk_spend.toml"
    path.write_text(study_text("desk_spend", "glee.bargaining", [{"alice": "participant", "bob": "opponent"}, {"alice": "thinker", "bob": "plain"}, {"alice": "plain", "bob": "thinker"}], {"money": 100, "horizon": 2}, models, PLAIN))
    db = tmp_path / "s.db"
    store = Store(db)
    try:
        store.save_game(id="s1", study="desk_spend", game="glee.bargaining", config={}, seats={"alice": "thinker", "bob": "plain"}, repeat=0, seed=1, prompt_version="1", status="done", outcome={}, metrics={}, error=None,
                        turn_records=[_turn(0, "alice", 100, 30, 0.00022, reasoning=20), _turn(1, "bob", 50, 5, 0.0), _turn(2, "alice", 100, 30, 0.0, cached=True, reasoning=20)])
        store.save_game(id="s2", study="desk_spend", game="glee.bargaining", config={}, seats={"alice": "plain", "bob": "thinker"}, repeat=0, seed=2, prompt_version="1", status="done", outcome={}, metrics={}, error=None,
                        turn_records=[_turn(0, "alice", 70, 7, 0.0), _turn(1, "bob", 10, 40, 0.00017, reasoning=35)])
        store.save_game(id="s3", study="desk_spend", game="glee.bargaining", config={}, seats={"alice": "human:abc", "bob": "opponent"}, repeat=0, seed=3, prompt_version="1", status="done", outcome={}, metrics={}, error=None,
                        turn_records=[_turn(0, "alice", 0, 0, 0.0), _turn(1, "bob", 0, 0, 0.0)])
        store.save_game(id="other", study="another_study", game="glee.bargaining", config={}, seats={"alice": "thinker", "bob": "plain"}, repeat=0, seed=1, prompt_version="1", status="done", outcome={}, metrics={}, error=None,
                        turn_records=[_turn(0, "alice", 999, 999, 9.0, reasoning=999)])
    finally:
        store.dispose()
    with AppServer(path, db) as server:
        page = wait_for_estimate(dash(server))
    rows = spend_rows(page)
    thinker, plain, total = rows["thinker"], rows["plain"], rows["total"]
    assert (thinker["calls"], thinker["input"], thinker["output"], thinker["reasoning"], thinker["cost"]) == ("2", "110", "70", "55", "0.0004")
    assert (plain["calls"], plain["input"], plain["output"], plain["reasoning"], plain["cost"]) == ("2", "120", "12", "not reported", "no prices")
    assert (total["calls"], total["input"], total["output"], total["reasoning"], total["cost"]) == ("4", "230", "82", "55", "0.0004")
    assert set(rows) == {"thinker", "plain", "total"}  # the person's and the scripted seats cost nothing
    assert "2 turn(s) of scripted players and people cost nothing" in page


def test_spend_and_estimate_of_a_study_played_against_a_priced_loopback_model(tmp_path, fake_openai):
    """The model-only games are played against the loopback server; the dashboard's spend equals
    the store's sums and its estimate equals the study's plan."""
    from agorabench.core.runner import run_study

    url, _ = fake_openai()
    models = [{"name": "opponent", "spec": "strategy/always-reject"},
              {"name": "remote", "spec": "openai/fake", "base_url": url, "max_tokens": 16, "price_input": 1.0, "price_output": 2.0},
              {"name": "free", "spec": "openai/free", "base_url": url, "max_tokens": 8}]
    path = tmp_path / "desk_loop.toml"
    seats = [{"alice": "participant", "bob": "opponent"}, {"alice": "remote", "bob": "opponent"}, {"alice": "free", "bob": "opponent"}]
    path.write_text(study_text("desk_loop", "glee.bargaining", seats, {"money": 100, "horizon": 2}, models, PLAIN))
    db = tmp_path / "l.db"
    run_study(load_study(path), db, progress=False, probe=False)
    plan = asyncio.run(build_plan(load_study(path)))
    with sqlite3.connect(db) as con:
        stored = {m: con.execute(
            "select count(*), sum(t.prompt_tokens), sum(t.completion_tokens), sum(t.cost) from turns t join games g on g.id = t.game_id "
            "where g.study = 'desk_loop' and json_extract(g.seats, '$.' || t.role) = ? and not t.cached", (m,)).fetchone() for m in ("remote", "free")}
        scripted_turns = con.execute("select count(*) from turns t join games g on g.id = t.game_id where json_extract(g.seats, '$.' || t.role) = 'opponent'").fetchone()[0]
    assert stored["remote"][0] > 0 and stored["remote"][1] > 0 and stored["free"][0] > 0
    with AppServer(path, db) as server:
        page = wait_for_estimate(dash(server))
    rows = spend_rows(page)
    for name in ("remote", "free"):
        n, prompt, completion, cost = stored[name]
        r = rows[name]
        assert (int(r["calls"]), int(r["input"]), int(r["output"]), r["reasoning"]) == (n, prompt, completion, "not reported")
        m = plan.models[name]
        assert (int(r["plan-games"]), int(r["plan-calls"]), int(r["plan-input"]), int(r["plan-output"])) == (m.games, round(m.calls), round(m.input_tokens), round(m.output_tokens))
    n, prompt, completion, cost = stored["remote"]
    assert rows["remote"]["cost"] == f"{cost:.4f}" and abs(cost - (prompt * 1.0 + completion * 2.0) / 1e6) < 1e-12
    assert rows["remote"]["plan-cost"] == f"{plan.models['remote'].cost:.4f}" and plan.models["remote"].cost > 0
    assert rows["free"]["cost"] == rows["free"]["plan-cost"] == "no prices"
    total = rows["total"]
    assert int(total["calls"]) == stored["remote"][0] + stored["free"][0] and int(total["plan-games"]) == plan.todo == 2
    assert f"{scripted_turns} turn(s) of scripted players and people cost nothing" in page
    assert "Estimate for the whole study" in page and "1 game(s) with a person in a seat are not estimated" in page


def test_a_scripted_study_spends_nothing_and_its_estimate_says_so(tmp_path):
    models = [{"name": "opponent", "spec": "strategy/always-reject"}, {"name": "spe", "spec": "strategy/spe"}]
    path = tmp_path / "desk_free.toml"
    path.write_text(study_text("desk_free", "glee.bargaining", [{"alice": "participant", "bob": "opponent"}, {"alice": "spe", "bob": "opponent"}], {"money": 100, "horizon": 2}, models, PLAIN))
    db = tmp_path / "f.db"
    from agorabench.core.runner import run_study

    run_study(load_study(path), db, progress=False, probe=False)
    with sqlite3.connect(db) as con:
        n_turns, tokens, cost = con.execute("select count(*), sum(prompt_tokens + completion_tokens), sum(cost) from turns").fetchone()
    assert n_turns > 0 and tokens == 0 and cost == 0
    with AppServer(path, db) as server:
        page = wait_for_estimate(dash(server))
    rows = spend_rows(page)
    assert set(rows) == {"total"} and (rows["total"]["calls"], rows["total"]["input"], rows["total"]["output"], rows["total"]["cost"]) == ("0", "0", "0", "no prices")
    assert f"{n_turns} turn(s) of scripted players and people cost nothing" in page
    assert "No language model plays in the estimated games: nothing to pay for." in page


def test_an_estimate_that_cannot_be_computed_says_why(tmp_path, monkeypatch):
    import agorabench.core.plan as plan_module

    async def broken(study, *a, **k):
        raise ValueError("no sample play finished")

    monkeypatch.setattr(plan_module, "build_plan", broken)
    path = web_study(tmp_path, name="desk_noplan", web=PLAIN)
    with AppServer(path, tmp_path / "e.db") as server:
        page = wait_for_estimate(dash(server))
    assert "No estimate: the estimate could not be computed: ValueError: no sample play finished." in page
    with AppServer(None, tmp_path / "e.db") as server:  # a database alone: no study, no spend table
        page = dash(server).get("/dash").text
    assert 'id="spend"' not in page
