"""Each turn's prompt-cache reads and writes, billed tier and fallbacks to the standard tier,
stored in the ``usage`` table (a row only where there is something to say) and read back by the
store, the analysis frames and the export, the report's spend table and the dashboard; a
database written before the table reads as zeros; a re-asked turn adds its attempts up. The
last test plays a study against the loopback OpenAI server at the flex tier with a fallback."""

from __future__ import annotations

import asyncio
import csv
import re
import sqlite3
from typing import ClassVar, Literal

import httpx
import pytest
import sqlalchemy as sa

from agorabench.analysis.frames import USAGE_FIELDS, export, turns_df
from agorabench.analysis.report import spend
from agorabench.core.actions import Action
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.core.table import Prompt, Reply, Table, Usage
from agorabench.records import TurnRecord
from agorabench.store.store import Store
from support.providers import provider_server, server_stats
from support.web import TOKEN, AppServer, study_text



def _turn(idx: int, role: str = "alice", cost: float = 0.001, cached: bool = False, **usage) -> TurnRecord:
    return TurnRecord(index=idx, role=role, phase="p", messages=[{"role": "user", "content": f"q{idx}"}], raw="a", action=None, valid=True, retries=0, error=None,
                      prompt_tokens=1000, completion_tokens=50, cost=cost, latency=0.1, cached=cached, **usage)


def _save(store: Store, game_id: str, turns: list[TurnRecord], study: str = "s") -> None:
    store.save_game(id=game_id, study=study, game="glee.bargaining", config={}, seats={"alice": "m", "bob": "n"}, repeat=0, seed=1, prompt_version="1", status="done", outcome={}, metrics={}, error=None, turn_records=turns)


TURNS = [
    _turn(0, cached_tokens=600, tier="standard"),  # a cache read: a row (its tier null, as standard reads)
    _turn(1, role="bob", tier="flex", fallbacks=0),
    _turn(2),  # nothing to say: no row
    _turn(3, cache_write_tokens=300, tier="mixed", fallbacks=1),
    _turn(4, cost=0.0, cached=True),  # from the response cache: no row
]


def test_rows_only_where_there_is_something_to_say_and_read_back(make_db, tmp_path):
    """On SQLite and PostgreSQL alike."""
    store = Store(make_db("u"))
    _save(store, "g1", TURNS)
    with store.engine.connect() as con:
        rows = [tuple(r) for r in con.execute(sa.text("select idx, cached_tokens, cache_write_tokens, tier, fallbacks from usage order by idx"))]
    assert rows == [(0, 600, 0, None, 0), (1, 0, 0, "flex", 0), (3, 0, 300, "mixed", 1)]
    expected = [(600, 0, None, 0), (0, 0, "flex", 0), (0, 0, None, 0), (0, 300, "mixed", 1), (0, 0, None, 0)]
    assert [(r["cached_tokens"], r["cache_write_tokens"], r["tier"], r["fallbacks"]) for r in store.turns("s")] == expected
    for transcripts in (True, False):  # the full read and the report's columnar one agree
        df = turns_df(store, "s", transcripts=transcripts)
        assert [(int(c), int(w), t if isinstance(t, str) else None, int(f)) for c, w, t, f in df[list(USAGE_FIELDS)].itertuples(index=False)] == expected
    out = tmp_path / "turns.csv"
    assert export(store, "s", "turns", "csv", str(out)) == 5
    with open(out, newline="") as f:
        read = list(csv.DictReader(f))
    assert [(r["cached_tokens"], r["cache_write_tokens"], r["tier"], r["fallbacks"]) for r in read] == [(str(c), str(w), t or "", str(n)) for c, w, t, n in expected]
    spent = {r["role"]: r for r in store.spend_by_seat("s")}
    assert (spent["alice"]["cached"], spent["alice"]["cache_write"], spent["alice"]["fallbacks"]) == (600, 300, 1)
    assert spent["alice"]["by_tier"] == {"standard": pytest.approx(0.002), "mixed": pytest.approx(0.001)} and spent["bob"]["by_tier"] == {"flex": pytest.approx(0.001)}
    _save(store, "g1", TURNS[2:3])  # a game stored again replaces its rows
    assert store.usage_columns("s") == {}
    _save(store, "g1", TURNS)
    assert store.forget_games(["g1"]) == 1 and store.usage_columns() == {}
    store.dispose()


def test_a_database_from_before_the_table_reads_as_zeros_and_gains_it(tmp_path):
    db = tmp_path / "old.db"
    store = Store(db)
    _save(store, "g1", TURNS)
    store.dispose()
    with sqlite3.connect(db) as con:
        con.execute("drop table usage")
    old = Store(db, read_only=True)
    assert [(r["cached_tokens"], r["tier"], r["fallbacks"]) for r in old.turns("s")] == [(0, None, 0)] * 5
    assert old.usage_columns("s") == {} and turns_df(old, "s", transcripts=False)["tier"].isna().all()
    assert {r["role"]: r["by_tier"] for r in old.spend_by_seat("s")} == {"alice": {"standard": pytest.approx(0.003)}, "bob": {"standard": pytest.approx(0.001)}}
    old.dispose()
    again = Store(db)  # opened to write: the table is made
    _save(again, "g2", TURNS[:1])
    assert again.usage_columns("s") == {("g2", 0): (600, 0, None, 0)}
    again.dispose()


class Replies:
    """A player answering from a list of replies (with their usage)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)

    async def act(self, request):
        return self.replies.pop(0)


class Pick(Action):
    response_format: ClassVar = "json"
    choice: Literal["left", "right"]


def test_a_reasked_turn_adds_its_attempts_up():
    player = Replies(
        Reply("not json", usage=Usage(1000, 10, 0.002, cached_tokens=0, cache_write_tokens=900, tier="flex", fallbacks=0)),
        Reply('{"choice": "left"}', usage=Usage(1100, 12, 0.001, cached_tokens=900, tier="standard", fallbacks=1)),
    )
    table = Table({"a": player}, seed=1, max_retries=2)
    assert asyncio.run(table.ask("a", Prompt("Pick a side."), Pick)) == Pick(choice="left")
    (turn,) = table.turns
    assert (turn.retries, turn.prompt_tokens, turn.completion_tokens, turn.cost) == (1, 2100, 22, pytest.approx(0.003))
    assert (turn.cached_tokens, turn.cache_write_tokens, turn.tier, turn.fallbacks) == (900, 900, "mixed", 1)
    same = Usage(tier="flex")
    same.add(Usage(tier="flex"))
    same.add(Usage())  # a reply billed at no tier changes nothing
    assert same.tier == "flex"


def test_a_flex_study_with_a_fallback_is_stored_per_turn_and_shown(tmp_path):
    """A model at the flex tier with ``service_tier_fallback``, its first flex call refused (no
    capacity): that turn fell back and was billed standard, the others flex at the batch price
    (half); the store's rows, the frames, the report's spend table, the run's books and the
    dashboard agree."""
    with provider_server("openai", unavailable=1) as base:
        models = [{"name": "opponent", "spec": "strategy/always-reject"},
                  {"name": "flexy", "spec": "openai/gpt-4o-mini", "base_url": base, "max_tokens": 64, "price_input": 2.0, "price_output": 8.0,
                   "service_tier": "flex", "service_tier_fallback": True}]
        path = tmp_path / "tiers.toml"
        path.write_text(study_text("tiers", "glee.bargaining", [{"alice": "participant", "bob": "opponent"}, {"alice": "flexy", "bob": "opponent"}], {"money": 100, "horizon": 2}, models))
        db = tmp_path / "t.db"
        stats, summary = run_study(load_study(path), db, progress=False, probe=False)
        served = server_stats(base)
    assert stats.done == 1 and served["statuses"].get("429") == 1 and served["tiers"]["default"] == 1
    with sqlite3.connect(db) as con:
        model_turns = con.execute("select t.idx, t.prompt_tokens, t.completion_tokens, t.cost from turns t join games g on g.id = t.game_id "
                                  "where json_extract(g.seats, '$.' || t.role) = 'flexy' order by t.idx").fetchall()
        usage = {idx: (tier, fallbacks) for idx, tier, fallbacks in con.execute("select idx, tier, fallbacks from usage")}
    assert model_turns and set(usage) == {t[0] for t in model_turns}  # every model turn says its tier; no scripted turn has a row
    fell = [idx for idx, (_, f) in usage.items() if f]
    assert len(fell) == 1 and usage[fell[0]] == (None, 1) and all(usage[i] == ("flex", 0) for i in usage if i != fell[0])
    for idx, prompt, completion, cost in model_turns:
        rate = 1.0 if idx in fell else 0.5
        assert cost == pytest.approx((prompt * 2.0 + completion * 8.0) * rate / 1e6)
    by_tier = {"standard": sum(c for i, _, _, c in model_turns if i in fell), "flex": sum(c for i, _, _, c in model_turns if i not in fell)}
    assert summary["by_tier"] == {k: pytest.approx(v) for k, v in by_tier.items()}
    store = Store(db, read_only=True)
    bill = spend(turns_df(store, "tiers", transcripts=False)).set_index("tier")
    store.dispose()
    assert bill.loc["flex", "cost"] == pytest.approx(by_tier["flex"]) and bill.loc["standard", "cost"] == pytest.approx(by_tier["standard"])
    assert bill.loc["flex", "turns"] == len(model_turns) - 1
    with AppServer(path, db) as server:
        page = httpx.get(f"{server.url}/dash", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60).text
    row = re.search(r'<tr class="spend-model"><td data-label="model" class="model">flexy</td>(.*?)</tr>', page, re.S).group(1)
    tiers = re.search(r'class="tiers">([^<]*)<', row).group(1)
    assert f"flex ${by_tier['flex']:.4f}" in tiers and f"standard ${by_tier['standard']:.4f}" in tiers and "(1 fell back to standard)" in tiers
