"""Issue 28, item 9: claims are kept on the database's clock. Two runs sharing one database from
machines whose clocks differ by minutes took each other's live claims for stale ones (one host
300 s ahead saw every heartbeat of the other as 300 s old) and played the same games twice. A
"host" here is this process with ``time.time`` moved by the skew while it claims."""

from __future__ import annotations

import contextlib
import time

import pytest
import sqlalchemy as sa

from agorabench.store.store import Store

#: The skew of the issue: one host 300 s ahead of the other.
SKEW = 300.0


@contextlib.contextmanager
def host_clock(monkeypatch, offset: float):
    """Everything inside runs on a host whose clock is ``offset`` seconds off."""
    real = time.time
    with monkeypatch.context() as m:
        m.setattr(time, "time", lambda: real() + offset)
        yield


def _heartbeats(store: Store) -> dict[str, float]:
    with store.engine.connect() as conn:
        return dict(conn.execute(sa.text("select game_id, heartbeat from claims")).all())


@pytest.mark.parametrize("offset", [SKEW, -SKEW], ids=["ahead", "behind"])
def test_a_host_with_a_skewed_clock_leaves_live_claims_alone(make_db, monkeypatch, offset):
    """Host B (right clock) and host A (``offset`` off) share one database: neither takes the
    other's fresh claims, one at a time or in a batch, and heartbeats are the database's time."""
    store = Store(make_db("skew"))
    try:
        # host B claims games; host A, whose clock is off, must see them as live
        assert store.claim_many(["g1", "g2", "g3"], "s", "hostb:11:x:b") == {"g1", "g2", "g3"}
        with host_clock(monkeypatch, offset):
            assert not store.claim("g1", "s", "hosta:22:y:a")
            assert store.claim_many(["g2", "g3", "g4"], "s", "hosta:22:y:a") == {"g4"}
            assert store.claim("g5", "s", "hosta:22:y:a")
            store.heartbeat("hosta:22:y:a")  # the runner's heartbeat on the skewed host
        # and host B, on its own clock, leaves host A's claims alone too
        assert not store.claim("g4", "s", "hostb:11:x:b")
        assert store.claim_many(["g4", "g5", "g6"], "s", "hostb:11:x:b") == {"g6"}
        beats = _heartbeats(store)
        assert max(beats.values()) - min(beats.values()) < 60, beats  # one clock, not two
        assert all(abs(b - time.time()) < 60 for b in beats.values()), beats  # the database's (here: this machine's)
        assert {c["game_id"] for c in store.running("s")} == {f"g{i}" for i in range(1, 7)}
        with host_clock(monkeypatch, offset):  # the dashboard of the skewed host lists them all
            assert {c["game_id"] for c in store.running("s")} == {f"g{i}" for i in range(1, 7)}
        # a claim that really stopped beating is still taken over, whatever the host's clock
        with store.engine.begin() as conn:
            conn.execute(sa.text("update claims set heartbeat = heartbeat - 10000 where game_id = 'g1'"))
        with host_clock(monkeypatch, offset):
            assert store.claim("g1", "s", "hosta:22:y:a")
    finally:
        store.dispose()


def test_a_run_on_a_host_ahead_plays_none_of_another_hosts_claimed_games(tmp_path, monkeypatch, capsys):
    """`agora run` on a host 300 s ahead leaves the games another host holds to it (it said
    "0 being played by another process" and played them again)."""
    from support.helpers import agora
    from support.studies import envy_points, scripted

    from agorabench.core.study import load_study

    study, db = tmp_path / "shared.toml", tmp_path / "shared.db"
    study.write_text(envy_points("shared", [scripted("always-b"), scripted("self-max")], grid={"matrix": ["M1", "M2", "M3"]}, fixed={"peer_status": "leading", "margin": "marginal", "peer_move": "B"}))
    ids = [s.id for s in load_study(study).expand()]
    store = Store(db)
    assert store.claim_many(ids[:4], "shared", "otherhost:7:1:t") == set(ids[:4])  # a live run elsewhere
    store.dispose()
    with host_clock(monkeypatch, SKEW):
        rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0, err
    assert f"{len(ids)} games, 0 already done, {len(ids) - 4} played" in out and "4 being played by another process" in out, out
