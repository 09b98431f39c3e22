"""The dashboard as a monitor (issue 23, item 6): it refreshes itself (and can be paused), the
Games page lists the games being played now (a participant's live game, a run's claimed game),
and each participant shows how long they have been idle."""

from __future__ import annotations

import httpx

from agorabench.store.store import Store, claim_owner
from support.web import TOKEN, AppServer, Participant, web_study


def test_the_dashboard_refreshes_and_lists_running_games(tmp_path):
    db = tmp_path / "w.db"
    path = web_study(tmp_path, name="web_monitor", web={"attention_checks": []})
    with AppServer(path, db) as server:
        p = Participant(server.url, "MON1")
        p.enter()
        p.post("consent", agree="yes")
        p.post("instructions")
        p.post("quiz", q0="Yes")
        p.seq()  # the game runs, waiting for the person's first offer
        store = Store(db)
        try:
            store.claim("abcdef0123456789abcdef01", "other_study", claim_owner("bench"))
        finally:
            store.dispose()
        dash = httpx.Client(base_url=server.url, follow_redirects=True)
        overview = dash.get(f"/dash?token={TOKEN}").text
        assert '<meta http-equiv="refresh" content="10">' in overview and "idle min" in overview
        assert 'http-equiv="refresh"' not in dash.get("/dash?refresh=0").text
        games = dash.get("/dash/games").text
        running = games.split('id="running"')[1].split("</table>")[0]
        assert "participant human:" in running and "(alice)" in running
        assert "abcdef0123456789abcdef01" in running and "other_study" in running
        only = dash.get("/dash/games?study=web_monitor").text.split('id="running"')[1].split("</table>")[0]
        assert "other_study" not in only and "participant human:" in only
    store = Store(db)
    try:
        assert [c["game_id"] for c in store.running("other_study")] == ["abcdef0123456789abcdef01"]
        assert store.running("other_study", ttl=-1) == []  # a claim past its heartbeat's time is not running
    finally:
        store.dispose()
