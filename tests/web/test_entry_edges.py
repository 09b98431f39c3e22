"""Issue 28, items 13 and 14: the participant app at its edges, over HTTP (no browser).

13. Only a participant's own live session of this study makes an arrival a returning one: a
    made-up ``agora_session`` cookie (or another participant's) is a new arrival, held to the
    start limit and the cap on live games, while the real participant still gets back in.
14. Participant ids that look alike (another case, fullwidth forms) are one person, with one
    game and one completion code; by default an id that is not ASCII after normalisation (e.g.
    with a Cyrillic letter) is refused, and ``participant_ids = "unicode"`` admits it as a
    person of its own.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets

import httpx
import pytest

from agorabench.core.study import StudyError, load_study
from agorabench.store.participants import Participants
from agorabench.store.store import Store
from agorabench.web.participants import id_refusal, participant_from_query, participant_key, pid_hash
from agorabench.web.play import Manager
from agorabench.web.settings import web_settings
from support.web import AppServer, Participant, web_study

PLAIN = {"attention_checks": [], "quiz": []}
CYRILLIC_A = "\u0410"  # looks like the Latin A


def _start(client: httpx.Client, pid: str) -> httpx.Response:
    """An entry link opened by ``client`` (not following the redirect)."""
    return client.get("/start", params={"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": "x"}, follow_redirects=False)


def _rows(db, study: str) -> list[dict]:
    store = Store(db)
    try:
        return Participants(store).of_study(study)
    finally:
        store.dispose()


# item 13: the start limit and the cap hold for any arrival that is not a returning one -------


def test_made_up_session_cookies_are_held_to_the_start_limit_and_the_cap(tmp_path):
    path = web_study(tmp_path, name="web_junk", web={**PLAIN, "starts_per_minute": 10, "max_live": 5})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        statuses, admitted = [], []
        for i in range(60):
            c = httpx.Client(base_url=server.url, cookies={"agora_session": secrets.token_urlsafe(32)}, timeout=30)
            r = _start(c, f"junk{i:03d}")
            statuses.append(r.status_code)
            if r.status_code == 303:  # straight on to the play screen: the game starts and runs
                p = Participant(server.url, f"junk{i:03d}")
                p.c = httpx.Client(base_url=server.url, follow_redirects=True, timeout=30, cookies={"agora_session": r.cookies["agora_session"]})
                p.url = r.headers["location"]
                p.post("consent", agree="yes"), p.post("instructions")
                p.until('id="turn-form"')
                admitted.append(p)
        # 5 games fill the cap; the next 5 arrivals are turned away as full and count as starts;
        # after 10 starts in the minute the address is told to wait
        assert statuses == [303] * 5 + [503] * 5 + [429] * 50, statuses
        manager = server.app.state.manager
        assert sum(1 for live in manager.live.values() if live.task is not None and not live.task.done()) == 5
        # another participant's real session cookie does not make a new id a returning one
        other = httpx.Client(base_url=server.url, cookies={"agora_session": admitted[1].url.rsplit("/", 1)[-1]})
        assert _start(other, "junk999").status_code == 429
        # the real participant, with their own cookie, is let back in past both limits
        first = admitted[0]
        back = _start(first.c, first.pid)
        assert back.status_code == 303 and back.headers["location"] == first.url
        assert first.get(first.url).status_code == 200 and 'id="turn-form"' in first.pages[-1]
        # their id with a made-up cookie (another browser) is a new arrival: held to the limit
        assert _start(httpx.Client(base_url=server.url, cookies={"agora_session": "x"}), first.pid).status_code == 429
    assert len(_rows(db, "web_junk")) == 5


def test_a_made_up_cookie_meets_the_cap_without_a_start_limit(tmp_path):
    path = web_study(tmp_path, name="web_junk_cap", web={**PLAIN, "starts_per_minute": 0, "max_live": 2})
    with AppServer(path, tmp_path / "web.db") as server:
        for pid in ("capA", "capB"):
            p = Participant(server.url, pid)
            p.enter(), p.post("consent", agree="yes"), p.post("instructions")
            p.until('id="turn-form"')
        junk = httpx.Client(base_url=server.url, cookies={"agora_session": secrets.token_urlsafe(32)})
        r = _start(junk, "capC")
        assert r.status_code == 503 and "full" in r.text
        assert _start(p.c, "capB").status_code == 303  # the returning one is not counted as new


# item 14: look-alike participant ids ----------------------------------------------------------


def test_participant_keys_fold_look_alikes_and_keep_lower_case_ascii_pseudonyms():
    assert participant_key("ABC123") == participant_key("abc123") == participant_key("\uff21\uff22\uff23\uff11\uff12\uff13") == participant_key(" abc123 ") == "abc123"
    assert participant_key(CYRILLIC_A + "BC123") != "abc123"
    # the pseudonym of an id that was already lower-case ASCII is what it always was
    assert pid_hash("s", participant_key("abc123")) == hashlib.sha256(b"s\x00abc123").hexdigest()[:16]
    assert id_refusal("\uff21\uff22\uff23\uff11\uff12\uff13") is None and id_refusal("ABC123") is None
    assert "plain letters" in id_refusal(CYRILLIC_A + "BC123") and id_refusal(CYRILLIC_A + "BC123", "unicode") is None
    # fullwidth punctuation is read as its ASCII form; other symbols stay refused
    assert participant_from_query({"participant": "p\uff0d1"})[:2] == ("link", "p\uff0d1")
    assert participant_from_query({"participant": "p 1"}) is None and participant_from_query({"participant": "\u2603"}) is None


def test_look_alike_ids_are_one_participant_with_one_game_and_code(tmp_path):
    path = web_study(tmp_path, name="web_alike", web={**PLAIN, "starts_per_minute": 0})
    db = tmp_path / "web.db"
    with AppServer(path, db) as server:
        p = Participant(server.url, "ABC123")
        p.enter()
        token = p.url.rsplit("/", 1)[-1]
        # look-alikes from another browser: the same person, who started already
        for alike in ("abc123", "aBc123", "\uff21\uff22\uff23\uff11\uff12\uff13", " ABC123 "):
            r = _start(httpx.Client(base_url=server.url), alike)
            assert r.status_code == 409 and "already started" in r.text, alike
        p.post("consent", agree="yes"), p.post("instructions")
        p.post("play", seq=p.seq(), alice_gain="60", bob_gain="40")
        p.post("play", seq=p.seq(), decision="accept")
        p.past_results()
        p.post("questionnaire", a_why="because", a_fair="3")
        code = re.search(r'id="code">([0-9A-F]+)<', p.get(p.url).text).group(1)
        # the same browser entering with any look-alike comes back to its own finished session
        for alike in ("abc123", "\uff41\uff42\uff43\uff11\uff12\uff13"):
            r = _start(p.c, alike)
            assert r.status_code == 303 and r.headers["location"] == f"/p/{token}"
            assert f'id="code">{code}<' in p.get(p.url).text
    (row,) = _rows(db, "web_alike")
    assert row["participant"] == "ABC123" and row["game_status"] == "done" and row["code"] == code
    assert row["pid_hash"] == pid_hash("web_alike", "abc123")


def test_a_cyrillic_look_alike_is_refused_by_default_and_its_own_person_with_unicode_ids(tmp_path):
    cyrillic = CYRILLIC_A + "BC123"
    path = web_study(tmp_path, name="web_ascii", web={**PLAIN, "starts_per_minute": 0})
    with AppServer(path, tmp_path / "ascii.db") as server:
        assert _start(httpx.Client(base_url=server.url), "ABC123").status_code == 303
        r = _start(httpx.Client(base_url=server.url), cyrillic)
        assert r.status_code == 400 and "plain letters" in r.text
        assert _start(httpx.Client(base_url=server.url, cookies={"agora_session": "x"}), "abc" + "\u0441" + "123").status_code == 400
    assert [row["participant"] for row in _rows(tmp_path / "ascii.db", "web_ascii")] == ["ABC123"]

    path = web_study(tmp_path, name="web_unicode", web={**PLAIN, "starts_per_minute": 0, "participant_ids": "unicode"})
    with AppServer(path, tmp_path / "unicode.db") as server:
        latin, other = httpx.Client(base_url=server.url), httpx.Client(base_url=server.url)
        a, b = _start(latin, "ABC123"), _start(other, cyrillic)
        assert a.status_code == b.status_code == 303 and a.headers["location"] != b.headers["location"]
        # its own look-alikes (another case, fullwidth Latin digits) are that person
        assert _start(httpx.Client(base_url=server.url), cyrillic.lower()).status_code == 409
        assert _start(other, "\u0430bc\uff11\uff12\uff13").headers["location"] == b.headers["location"]
    rows = _rows(tmp_path / "unicode.db", "web_unicode")
    assert [r["participant"] for r in rows] == ["ABC123", cyrillic] and rows[0]["game_id"] != rows[1]["game_id"]


def test_the_participant_ids_setting_is_checked(tmp_path):
    assert web_settings(load_study(web_study(tmp_path, name="web_ids"))).participant_ids == "ascii"
    with pytest.raises(StudyError, match="web.participant_ids"):
        web_settings(load_study(web_study(tmp_path, name="web_ids_bad", web={"participant_ids": "latin"})))


def test_allow_list_and_pattern_meet_look_alikes(tmp_path):
    path = web_study(tmp_path, name="web_alike_allow", web={**PLAIN, "starts_per_minute": 0, "allowed_participants": ["OK1"], "participant_pattern": "[A-Za-z0-9]+"})
    with AppServer(path, tmp_path / "w.db") as server:
        assert _start(httpx.Client(base_url=server.url), "ok1").status_code == 303  # a listed id, another case
        assert _start(httpx.Client(base_url=server.url), "\uff2f\uff2b\uff11").status_code == 409  # fullwidth: the same person
        assert _start(httpx.Client(base_url=server.url), "OK2").status_code == 403


def test_a_participant_entered_before_ids_were_normalised_keeps_their_row(tmp_path):
    """A row written by an earlier version hashed the id exactly as given; a participant with
    capitals in their id who comes back with it after an upgrade finds that row, not a new one."""
    path = web_study(tmp_path, name="web_legacy")
    db = tmp_path / "web.db"

    async def go() -> None:
        store = Store(db)
        manager = Manager(load_study(path), store)
        try:
            # as the earlier version wrote it: the pseudonym of "LEGACY1" itself
            old = manager.rows.enter("web_legacy", pid_hash("web_legacy", "LEGACY1"), lambda n: dict(
                token="t" * 43, participant="LEGACY1", source="prolific", params={}, csrf="c", stage="consent",
                base_spec=manager.human_specs[0].id, game_id="g" * 24, role="alice", quiz_attempts=0, attention=[], answers={}, created=0.0, updated=0.0,
            ))
            assert old == ("t" * 43, True)
            assert manager.enter("prolific", "LEGACY1", {}) == ("t" * 43, False)
            assert manager.returning("t" * 43, "LEGACY1") and not manager.returning("t" * 43, "OTHER1")
            # a lower-case id is its own key: its pseudonym is the one it always had
            token, new = manager.enter("prolific", "fresh1", {})
            assert new and manager.get(token)["pid_hash"] == pid_hash("web_legacy", "fresh1")
        finally:
            await manager.stop()
            store.dispose()

    asyncio.run(go())
