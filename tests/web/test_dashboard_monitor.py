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


def test_the_transcript_viewer_shows_each_turns_reasks(tmp_path):
    """Issue 23, item 5: an answer that could not be used and the feedback that asked again are
    shown with their own turn, and the next turn lists only what is new."""
    import asyncio
    from typing import ClassVar, Literal

    from agorabench.core.actions import Action
    from agorabench.core.table import Prompt, Reply, Table
    from agorabench.web.dashboard import Dashboard

    class YesNo(Action):
        response_format: ClassVar = "json"
        decision: Literal["yes", "no"]

    class Says:
        def __init__(self, *texts):
            self.texts = list(texts)

        async def act(self, request):
            return Reply(text=self.texts.pop(0))

    table = Table({"a": Says("perhaps", '{"decision": "yes"}', '{"decision": "no"}')}, seed=1, max_retries=2)
    table.set_system("a", "Rules.")
    asyncio.run(table.ask("a", Prompt("First?"), YesNo))
    asyncio.run(table.ask("a", Prompt("Second?"), YesNo))
    store = Store(tmp_path / "v.db")
    try:
        store.save_game(id="g1", study="s", game="x", config={}, seats={"a": "m"}, repeat=0, seed=1, prompt_version="1", status="done", outcome={}, metrics={}, error=None, turn_records=table.turns)
        dash = Dashboard.__new__(Dashboard)
        dash.store = store
        _, turns = dash.game("g1")
    finally:
        store.dispose()
    first, second = turns
    assert first["retries"] == 1 and len(first["reasks"]) == 1
    answer, feedback = first["reasks"][0]
    assert answer == "perhaps" and feedback.startswith("Your answer could not be used")
    assert [m["content"] for m in second["messages"]] == ["Second?"]  # not the whole transcript again
