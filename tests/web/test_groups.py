"""Issue 30 items 7 and 3 over HTTP: several people in one game (the waiting room, the fallback in
the empty seats after ``group_wait``, a dropout's seat handed to the fallback after the idle
deadline, a server restart mid-group-game), and the attention check every finishing participant
meets, whatever their role and however soon their game ended."""

from __future__ import annotations

import re
import time

import pytest

from agorabench.core.study import StudyError, load_study
from agorabench.store.participants import Participants
from agorabench.store.store import Store
from agorabench.web.play import Manager, group_game_id
from support.web import AppServer, Participant, web_study

PAIR = [{"alice": "participant", "bob": "participant"}]
SPE = [{"name": "spe", "spec": "strategy/spe"}]
PLAIN = {"attention_checks": [], "quiz": [], "starts_per_minute": 0, "bonus": {"alice": "0.01 * alice_gain", "bob": "0.01 * bob_gain"}}


def _pair_study(tmp_path, name: str, fixed: dict | None = None, **web):
    return web_study(tmp_path, name=name, seats=PAIR, models=SPE, fixed=fixed, web={**PLAIN, "group_fallback": "spe", **web})


def _rows(db, study: str) -> dict[str, dict]:
    store = Store(db)
    try:
        return {r["role"]: r for r in Participants(store).of_study(study)}
    finally:
        store.dispose()


def _game(db, game_id: str) -> tuple[dict, list[dict]]:
    store = Store(db)
    try:
        return store.game(game_id), store.turns(game_id=game_id)
    finally:
        store.dispose()


def _to_play(p: Participant) -> str:
    """Enter, consent, read the instructions: the play screen's first page."""
    p.enter()
    p.post("consent", agree="yes")
    p.post("instructions")
    return p.get(p.url).text


def _fields(page: str) -> set[str]:
    form = page[page.index('id="turn-form"'):]
    return set(re.findall(r'name="([a-z_]+)"', form)) - {"csrf", "seq"}


def test_two_people_play_one_bargaining_game(tmp_path):
    private = {"money": 100, "horizon": 2, "complete_info": False, "delta_a": 0.9, "delta_b": 0.73}
    path = _pair_study(tmp_path, "web_pair", fixed=private, group_wait=60)
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        a, b = Participant(server.url, "PAIRA"), Participant(server.url, "PAIRB")
        first = _to_play(a)
        assert 'id="group-waiting"' in first and "60 seconds" in first  # alone: the waiting room
        assert 'id="group-waiting"' in a.get(a.url).text  # and still, on reload
        _to_play(b)
        # the group formed when Bob arrived: Alice's open turn is her offer, Bob waits for it
        page = a.until('id="turn-form"')
        assert _fields(page) == {"alice_gain", "bob_gain"}
        a.post("play", seq=a.seq(), alice_gain="70", bob_gain="30")
        page = b.until('id="turn-form"')
        assert _fields(page) == {"decision"} and "$70" in page  # Bob sees Alice's offer
        b.post("play", seq=b.seq(), decision="reject")
        page = b.until('id="turn-form"')
        assert _fields(page) == {"bob_gain", "alice_gain"}  # round 2: Bob offers
        b.post("play", seq=b.seq(), alice_gain="45", bob_gain="55")
        page = a.until('id="turn-form"')
        assert _fields(page) == {"decision"}
        a.post("play", seq=a.seq(), decision="accept")
        ra, rb = a.past_results(), b.past_results()
        assert "Not every participant" not in ra + rb
    rows = _rows(db, "web_pair")
    assert rows["alice"]["game_id"] == rows["bob"]["game_id"]
    info = rows["alice"]["group_info"]
    assert info["members"] == {"alice": rows["alice"]["pid_hash"], "bob": rows["bob"]["pid_hash"]} and info["fallback"] == {} and info["note"] == ""
    assert rows["alice"]["game_id"] == group_game_id(rows["alice"]["base_spec"], info["members"], {})
    assert rows["alice"]["group_info"]["waited"] >= rows["bob"]["group_info"]["waited"] >= 0
    game, turns = _game(db, rows["alice"]["game_id"])
    assert game["status"] == "done" and game["outcome"]["agreed"] is True
    assert game["seats"] == {"alice": f"human:{rows['alice']['pid_hash']}", "bob": f"human:{rows['bob']['pid_hash']}"}
    assert [(t["role"], t["action"]) for t in turns] == [
        ("alice", {"alice_gain": 70.0, "bob_gain": 30.0}), ("bob", {"decision": "reject"}),
        ("bob", {"alice_gain": 45.0, "bob_gain": 55.0}), ("alice", {"decision": "accept"}),
    ]
    # each person's bonus by their own role's rule (Bob's gain is discounted by a round)
    assert rows["alice"]["game_status"] == rows["bob"]["game_status"] == "done"
    assert rows["alice"]["bonus"] == pytest.approx(0.01 * game["outcome"]["alice_gain"], abs=0.006)
    assert rows["bob"]["bonus"] == pytest.approx(0.01 * game["outcome"]["bob_gain"], abs=0.006) and rows["bob"]["bonus"] > 0
    # each saw only their own role's pages: each one's own loss per round, never the other's
    seen_a, seen_b = "\n".join(a.pages), "\n".join(b.pages)
    assert "10%" in seen_a and "27%" not in seen_a and "0.73" not in seen_a
    assert "27%" in seen_b and "10%" not in seen_b and "0.9" not in seen_b


def test_a_lone_participant_plays_with_the_fallback_after_the_wait(tmp_path):
    path = _pair_study(tmp_path, "web_lone", group_wait=1)
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        a = Participant(server.url, "LONE1")
        assert 'id="group-waiting"' in _to_play(a)
        started = time.time()
        a.post("play", seq=a.seq(), alice_gain="60", bob_gain="40")  # the form comes once the wait is over
        assert time.time() - started >= 0.5
        while 'id="submit-results"' not in (page := a.get(a.url).text):
            if 'id="turn-form"' in page:
                fields = _fields(page)
                a.post("play", seq=a.seq(), **({"decision": "reject"} if "decision" in fields else {"alice_gain": "60", "bob_gain": "40"}))
            time.sleep(0.05)
        assert "the computer played the missing parts" in page
    row = _rows(db, "web_lone")["alice"]
    info = row["group_info"]
    assert info["fallback"] == {"bob": "spe"} and info["waited"] >= 1
    assert re.fullmatch(r"seat bob filled by fallback spe after waiting \d+ s", info["note"]), info["note"]
    game, turns = _game(db, row["game_id"])
    assert game["status"] == "done" and game["seats"] == {"alice": f"human:{row['pid_hash']}", "bob": "spe"}
    assert {t["role"] for t in turns} == {"alice", "bob"} and all(t["valid"] for t in turns)
    assert row["game_id"] == group_game_id(row["base_spec"], {"alice": row["pid_hash"]}, {"bob": "spe"})


def test_a_dropout_is_replaced_by_the_fallback_and_the_other_finishes(tmp_path):
    path = _pair_study(tmp_path, "web_dropout", group_wait=60, idle_timeout=1.5, bonus="0.5")
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        a, b = Participant(server.url, "STAYS"), Participant(server.url, "LEAVES")
        _to_play(a), _to_play(b)
        a.post("play", seq=a.seq(), alice_gain="99", bob_gain="1")
        b.until('id="turn-form"')  # Bob sees his turn ... and goes; after 1.5 s the fallback plays his seat
        page = a.until('id="turn-form"', timeout=20)
        assert _fields(page) == {"decision"}  # round 2: the fallback (SPE) made Bob's offer
        a.post("play", seq=a.seq(), decision="accept")
        ra = a.past_results()
        assert "Another participant stopped answering" in ra
        assert "did not answer in time" in b.until('id="submit-results"')
    rows = _rows(db, "web_dropout")
    game, turns = _game(db, rows["alice"]["game_id"])
    assert game["status"] == "abandoned" and game["outcome"]["agreed"] is True  # the game went on
    assert rows["bob"]["dropped_out"] is not None and rows["alice"]["dropped_out"] is None
    assert (rows["alice"]["game_status"], rows["bob"]["game_status"]) == ("done", "abandoned")
    assert rows["alice"]["bonus"] == 0.5 and rows["bob"]["bonus"] == 0
    bob = [t for t in turns if t["role"] == "bob"]
    assert len(bob) == 2 and all(t["valid"] for t in bob)  # the fallback's answers, not timeouts


def test_a_restart_mid_group_game_resumes_both_people(tmp_path):
    path = _pair_study(tmp_path, "web_pair_restart", group_wait=60)
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        a, b = Participant(server.url, "RESTA"), Participant(server.url, "RESTB")
        _to_play(a), _to_play(b)
        a.post("play", seq=a.seq(), alice_gain="80", bob_gain="20")
        b.post("play", seq=b.seq(), decision="reject")
        before = b.until('id="turn-form"')
        assert _fields(before) == {"alice_gain", "bob_gain"}
    with AppServer(path, db) as server:  # every member's recorded answers are replayed
        for p in (a, b):
            p.c.base_url = server.url
        again = b.until('id="turn-form"')
        assert _fields(again) == {"alice_gain", "bob_gain"} and b.seq() == re.search(r'name="seq" value="(\d+)"', before).group(1)
        assert 'id="turn-form"' not in a.get(a.url).text  # Alice waits for Bob's offer, as before
        b.post("play", seq=b.seq(), alice_gain="50", bob_gain="50")
        a.post("play", seq=a.seq(), decision="accept")
        a.past_results(), b.past_results()
    rows = _rows(db, "web_pair_restart")
    game, turns = _game(db, rows["alice"]["game_id"])
    assert game["status"] == "done" and [t["action"] for t in turns] == [
        {"alice_gain": 80.0, "bob_gain": 20.0}, {"decision": "reject"}, {"alice_gain": 50.0, "bob_gain": 50.0}, {"decision": "accept"},
    ]


@pytest.mark.llm
def test_the_embedded_model_takes_an_empty_seat(tmp_path):
    """Plumbing with a language model as the fallback (it answers at random: only validity is
    checked): the lone participant's game is played to its end against it."""
    import os

    smol = {"name": "smol", "spec": "local", "max_tokens": 48, "constrained": True, "params": {"n_threads": int(os.environ.get("AGORA_THREADS", "2"))}}
    path = web_study(tmp_path, name="web_llm_seat", seats=PAIR, models=[smol], web={**PLAIN, "group_fallback": "smol", "group_wait": 0})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        a = Participant(server.url, "LLMSEAT")
        _to_play(a)
        while 'id="submit-results"' not in (page := a.get(a.url).text):
            if 'id="turn-form"' in page:
                fields = _fields(page)
                a.post("play", seq=a.seq(), **({"decision": "reject"} if "decision" in fields else {"alice_gain": "50", "bob_gain": "50"}))
            time.sleep(0.1)
    row = _rows(db, "web_llm_seat")["alice"]
    game, turns = _game(db, row["game_id"])
    assert game["status"] == "done" and game["seats"]["bob"] == "smol" and row["group_info"]["fallback"] == {"bob": "smol"}
    bob = [t for t in turns if t["role"] == "bob"]
    assert bob and all(t["prompt_tokens"] > 0 for t in bob if not t["cached"])


def test_the_waiting_room_survives_a_restart(tmp_path):
    """Who waits, and since when, is stored: after a restart the first participant is still in
    the waiting room with the time already waited, and the next arrival completes the group."""
    path = _pair_study(tmp_path, "web_wait_restart", group_wait=60)
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        a = Participant(server.url, "WAITA")
        assert 'id="group-waiting"' in _to_play(a)
        time.sleep(1.2)
    since = _rows(db, "web_wait_restart")["alice"]["waiting_since"]
    assert since is not None
    with AppServer(path, db) as server:
        a.c.base_url = server.url
        page = a.get(a.url).text
        assert 'id="group-waiting"' in page and int(re.search(r'data-start="(\d+)"', page).group(1)) >= 1
        b = Participant(server.url, "WAITB")
        _to_play(b)
        a.post("play", seq=a.seq(), alice_gain="50", bob_gain="50")
        b.post("play", seq=b.seq(), decision="accept")
        a.past_results(), b.past_results()
    rows = _rows(db, "web_wait_restart")
    assert rows["alice"]["waiting_since"] == since and rows["alice"]["group_info"]["waited"] >= 1.2
    assert rows["alice"]["game_id"] == rows["bob"]["game_id"] and rows["alice"]["group_info"]["fallback"] == {}
    game, _ = _game(db, rows["alice"]["game_id"])
    assert game["status"] == "done" and game["outcome"]["agreed"] is True


def test_a_dropout_stays_replaced_after_a_restart(tmp_path):
    """Replayed after a restart, the dropout's recorded timeout hands the seat to the fallback at
    the same turn: the other person finds their open turn as it was, and the game ends once."""
    path = _pair_study(tmp_path, "web_dropout_restart", group_wait=60, idle_timeout=4)  # Alice's open turn outlives the restart
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        a, b = Participant(server.url, "STAYS2"), Participant(server.url, "LEAVES2")
        _to_play(a), _to_play(b)
        a.post("play", seq=a.seq(), alice_gain="99", bob_gain="1")
        before = a.until('name="decision"', timeout=20)  # the fallback answered and offered for Bob
    dropped = _rows(db, "web_dropout_restart")["bob"]["dropped_out"]
    assert dropped is not None
    with AppServer(path, db) as server:
        a.c.base_url = server.url
        again = a.until('name="decision"', timeout=20)
        prompt = re.compile(r'id="prompt".*?</', re.S)
        assert prompt.search(again).group(0) == prompt.search(before).group(0)
        a.post("play", seq=a.seq(), decision="accept")
        a.past_results()
    rows = _rows(db, "web_dropout_restart")
    assert rows["bob"]["dropped_out"] == dropped and rows["bob"]["game_status"] == "abandoned"
    game, turns = _game(db, rows["alice"]["game_id"])
    assert game["status"] == "abandoned" and [t["role"] for t in turns] == ["alice", "bob", "bob", "alice"]


def test_a_group_game_needs_a_fallback_that_exists(tmp_path):
    db = str(tmp_path / "web.db")
    store = Store(db)
    try:
        with pytest.raises(StudyError, match="web.group_fallback"):
            Manager(load_study(web_study(tmp_path, name="web_nofb", seats=PAIR, models=SPE, web=PLAIN)), store)
        with pytest.raises(StudyError, match="neither a model of the study"):
            Manager(load_study(web_study(tmp_path, name="web_badfb", seats=PAIR, models=SPE, web={**PLAIN, "group_fallback": "nobody"})), store)
        with pytest.raises(StudyError, match="no strategy"):
            Manager(load_study(web_study(tmp_path, name="web_badst", seats=PAIR, models=SPE, web={**PLAIN, "group_fallback": "strategy/nope"})), store)
        m = Manager(load_study(web_study(tmp_path, name="web_specfb", seats=PAIR, models=SPE, web={**PLAIN, "group_fallback": "strategy/spe"})), store)
        assert m.fallback.name == "spe"  # the study's model with that spec
        assert [r for _, r in m.slots] == ["alice", "bob"]
    finally:
        store.dispose()


def test_a_database_served_before_group_games_gets_their_columns(tmp_path):
    """``web_participants`` as an earlier version created it (without the group columns) gains
    them when the web app opens the database; its rows read back with the new columns empty."""
    import sqlalchemy as sa

    from agorabench.store.schema import participants

    db = tmp_path / "old.db"
    store = Store(db)
    try:
        participants.create(store.engine)
        with store.engine.begin() as conn:
            for column in ("waiting_since", "group_info", "dropped_out"):
                conn.execute(sa.text(f"ALTER TABLE web_participants DROP COLUMN {column}"))
            conn.execute(sa.text(
                "INSERT INTO web_participants (token, study, participant, pid_hash, source, params, csrf, stage, base_spec, game_id, role, created, updated) "
                "VALUES ('tok', 's', 'P1', 'h', 'link', '{}', 'c', 'play', 'b', 'g', 'alice', 0, 0)"
            ))
        rows = Participants(store)
        rows.create_tables()
        have = {c["name"] for c in sa.inspect(store.engine).get_columns(participants.name)}
        assert {"waiting_since", "group_info", "dropped_out"} <= have
        row = rows.get("tok", "s")
        assert row["group_info"] is None and row["waiting_since"] is None and row["dropped_out"] is None
    finally:
        store.dispose()


# the attention check ------------------------------------------------------------------------


def test_every_finishing_participant_meets_every_attention_check(tmp_path):
    """A responder who accepts the first offer ends the game after one turn: the checks it never
    reached are shown before the results, and stored as not reached in play; a proposer with two
    turns meets the first check in play and the second after the game."""
    seats = [{"alice": "participant", "bob": "rej"}, {"alice": "fair", "bob": "participant"}]
    models = [{"name": "rej", "spec": "strategy/always-reject"}, {"name": "fair", "spec": "strategy/spe"}]
    checks = [
        {"after": 1, "question": "Choose Blue.", "options": ["Red", "Blue"], "answer": "Blue"},
        {"after": 3, "question": "Choose Red.", "options": ["Red", "Blue"], "answer": "Red"},
    ]
    path = web_study(tmp_path, name="web_checks", seats=seats, models=models, web={"quiz": [], "attention_checks": checks, "starts_per_minute": 0})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        prop, resp = Participant(server.url, "PROPOSER"), Participant(server.url, "RESPONDER")
        _to_play(prop), _to_play(resp)
        # the responder accepts the first offer: one turn, then both checks before the results
        resp.post("play", seq=resp.seq(), decision="accept")
        assert "Choose Blue." in resp.until('id="submit-attention"')
        resp.post("attention", answer="Blue")
        assert "Choose Red." in resp.until('id="submit-attention"')
        resp.post("attention", answer="Blue")  # wrong
        resp.past_results()
        # the proposer: the first check after the first offer, in play
        prop.post("play", seq=prop.seq(), alice_gain="60", bob_gain="40")
        assert "Choose Blue." in prop.until('id="submit-attention"')
        prop.post("attention", answer="Blue")
        prop.post("play", seq=prop.seq(), decision="reject")
        assert "Choose Red." in prop.until('id="submit-attention"')
        prop.post("attention", answer="Red")
        prop.past_results()
    rows = _rows(db, "web_checks")
    assert [(a["after"], a["passed"], a["in_play"]) for a in rows["bob"]["attention"]] == [(1, True, False), (3, False, False)]
    assert [(a["after"], a["passed"], a["in_play"]) for a in rows["alice"]["attention"]] == [(1, True, True), (3, True, False)]
    assert rows["bob"]["attention"][0]["turns"] == 1
