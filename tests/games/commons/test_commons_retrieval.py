"""What the commons memory stream retrieves for, as the original does (issue 29, items 1-4), and
the month of every commons turn (item 6).

Games are played with scripted players and a loopback ``/v1/embeddings`` server, and the texts
the server received are read back: every retrieval query is the original's prefix + the focal
point (the empty context of a remark too: the prefix alone), every memory is sent bare; the
reflection retrieves for "harvesting"; a pollution harvest takes the top 14 memories for
"factory"; ``embeddings_query_prefix = ""`` with ``focal_points = "earlier"`` is commons-6's
retrieval."""

from __future__ import annotations

import asyncio
import csv
import itertools
import re

import pytest

from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.models.embeddings import shared_embedder
from agorabench.games.commons.commons import Commons
from agorabench.games.commons.config import QUERY_PREFIX, CommonsConfig
from agorabench.games.commons.scenario import get_scenario
from agorabench.games.commons.importer import import_logs
from agorabench.games.commons.strategies import STRATEGIES
from support.embeddings import EmbeddingsServer
from support.helpers import run_agora
from support.studies import commons

DATED = re.compile(r"^- (\d{4}-\d\d-\d\d): (.*)$", re.MULTILINE)
_fresh = itertools.count()


@pytest.fixture(scope="module")
def server():
    srv = EmbeddingsServer()
    yield srv
    srv.close()


def play(server: EmbeddingsServer, months: int = 3, strategy: str = "sustainable", **cfg):
    """One scripted game whose embeddings come from the loopback server, under a model name of
    its own (the process keeps vectors per spec, so every text of this game is sent). Returns
    the game, its table, its outcome and the texts the server received, in order."""
    spec = f"openai/retrieval-{next(_fresh)}@{server.base_url}"
    config = CommonsConfig(months=months, embeddings=spec, **cfg)
    players = {r: STRATEGIES["summariser" if r == "manager" else strategy]() for r in Commons.roles(config)}
    table = Table(players, seed=1, embed=shared_embedder(spec))
    game = Commons(config, Prompts(Commons.prompt_dir))
    before = len(server.requests)
    outcome = asyncio.run(game.play(table))
    sent = [t for request in server.requests[before:] for t in request["input"]]
    return game, table, outcome, sent


def steps(outcome) -> list[str]:
    """The messages of every conversation step (the report and the remarks), in order."""
    return [m["message"] for month in outcome["months"] for m in month["report"] + month["discussion"]]


def memory_texts(game: Commons) -> set[str]:
    return {m.text for stream in game.last_play.streams.values() for m in stream.memories}


@pytest.mark.parametrize(
    ("scenario", "harvest_focal", "earlier"),
    [("fishery", "lake", ("lake", "fishing")), ("pasture", "pasture", ("pasture", "grazing")), ("pollution", "factory", ("river", "production")), ("trash", "lake", ("trash", "taking out the trash"))],
)
def test_queries_carry_the_original_prefix_and_memories_none(server, scenario, harvest_focal, earlier):
    game, table, outcome, sent = play(server, scenario=scenario)
    assert len(sent) == len(set(sent))  # each text once
    queries = {t.removeprefix(QUERY_PREFIX) for t in sent if t.startswith(QUERY_PREFIX)}
    memories = memory_texts(game)
    # every text sent is a prefixed query or a memory, sent bare; every memory that a retrieval
    # could see was sent bare (only the last month's writings are never retrieved)
    assert all(t.startswith(QUERY_PREFIX) or t in memories for t in sent)
    bare = [t for t in sent if not t.startswith(QUERY_PREFIX)]
    assert bare and not any(QUERY_PREFIX in t for t in bare)
    shown = {text for t in table.turns if t.phase in ("harvest", "discuss") for _, text in DATED.findall(t.messages[-1]["content"])}
    assert shown and shown <= set(bare)  # every memory shown was embedded bare
    # the harvest's focal point, the reflection's ("harvesting" in every scenario), the empty
    # context of every remark (the prefix alone), the conversation steps
    assert {harvest_focal, "harvesting", ""} <= queries
    assert QUERY_PREFIX in sent
    assert queries - {harvest_focal, "harvesting", ""} <= set(steps(outcome))
    # commons-6's words are no query (nor any bare focal point)
    assert not {w for w in earlier if w not in (harvest_focal, "harvesting")} & queries
    assert harvest_focal not in sent and "harvesting" not in sent and "" not in sent


def test_remark_queries_are_the_empty_context_and_every_step_before_it(server):
    _, table, outcome, sent = play(server, months=2, max_conversation_steps=8)
    queries = {t.removeprefix(QUERY_PREFIX) for t in sent if t.startswith(QUERY_PREFIX)}
    said = steps(outcome)
    assert outcome["months"][0]["report"] and len(said) > 2
    # the empty context, the Mayor's report and every remark that another one followed
    last = {month["discussion"][-1]["message"] for month in outcome["months"]}
    assert "" in queries and {m for m in said if m and m not in last} <= queries


def test_the_reflection_retrieves_for_harvesting(server):
    for scenario in ("fishery", "pasture", "pollution", "trash"):
        _, table, _, sent = play(server, months=2, scenario=scenario)
        insight = next(t for t in table.turns if t.phase == "memory_insight")
        assert QUERY_PREFIX + "harvesting" in sent
        assert re.findall(r"^\d+\) \d{4}-\d\d-\d\d: ", insight.messages[-1]["content"], re.M)  # the memories it drew from
        assert get_scenario(scenario, "en").memory["reflect_focal"] == "harvesting"
        assert get_scenario(scenario, "ja").memory["reflect_focal"] == "harvesting"


def harvest_memories(table: Table, role: str, month: int) -> list[tuple[str, str]]:
    turn = [t for t in table.turns if t.role == role and t.phase == "harvest"][month - 1]
    return DATED.findall(turn.messages[-1]["content"])


def test_a_pollution_harvest_takes_the_top_14_for_factory(server):
    # by month 4 an agent holds more than 14 live memories (two months of notes, limits and
    # insights, and the day's stock)
    _, table, _, sent = play(server, months=4, scenario="pollution")
    assert QUERY_PREFIX + "factory" in sent and QUERY_PREFIX + "river" not in sent
    for role in ("agent_0", "agent_3"):
        assert len(harvest_memories(table, role, 4)) == 14
    # the fishery takes 10; commons-6's words and k (focal_points = "earlier"): 10 for "river"
    _, fishery, _, _ = play(server, months=4, scenario="fishery")
    assert len(harvest_memories(fishery, "agent_0", 4)) == 10
    _, earlier, _, sent = play(server, months=4, scenario="pollution", focal_points="earlier")
    assert len(harvest_memories(earlier, "agent_0", 4)) == 10
    assert QUERY_PREFIX + "river" in sent and QUERY_PREFIX + "production" in sent and QUERY_PREFIX + "factory" not in sent


def test_without_a_prefix_queries_are_bare_and_the_empty_context_is_not_embedded(server):
    _, table, _, sent = play(server, months=2, embeddings_query_prefix="")
    assert not any(t.startswith(QUERY_PREFIX) for t in sent)
    assert "lake" in sent and "harvesting" in sent and "" not in sent
    assert any(t.phase == "discuss" for t in table.turns)


def test_the_earlier_variant_is_commons_6s_retrieval():
    """commons-6's prompts (recorded before the change: the SHA-256 of the turns' role, phase,
    messages and raw answers, free riders over 4 months, the tests' hashed vectors) come back
    with ``embeddings_query_prefix = ""`` and ``focal_points = "earlier"``; the defaults differ."""
    import hashlib
    import json

    from support.embeddings import fake_vector

    async def embed(texts):
        return [fake_vector(t) for t in texts]

    recorded = {
        ("fishery", "en"): "ba2a78920da9c9eee305ec35d74b235e39c0090c014b76adb1d541d57dfd9225",
        ("pollution", "en"): "d87a9dffe15051ee6f9e7f14ea5d3be9ff8805182a6341555fe6c380ae27c296",
        ("trash", "en"): "5a497262ca33f94be244447bf5f0261f6d1f0c757a12953438c24805a410f490",
        ("pasture", "ja"): "8d51c1f0c97f7030923ef88820bd8a07d8d187fb86a6ff69a88075133b83ca02",
    }

    def digest(**cfg) -> str:
        config = CommonsConfig(months=4, **cfg)
        players = {r: STRATEGIES["summariser" if r == "manager" else "free-rider"]() for r in Commons.roles(config)}
        table = Table(players, seed=1, embed=embed)
        asyncio.run(Commons(config, Prompts(Commons.prompt_dir)).play(table))
        turns = [{"role": t.role, "phase": t.phase, "messages": t.messages, "raw": t.raw} for t in table.turns]
        return hashlib.sha256(json.dumps(turns, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    for (scenario, language), expected in recorded.items():
        assert digest(scenario=scenario, language=language, embeddings_query_prefix="", focal_points="earlier") == expected
        assert digest(scenario=scenario, language=language) != expected


# -- the month of every turn (item 6) ---------------------------------------------------------


@pytest.mark.parametrize("settings", [{}, {"memory": "transcript"}, {"harvest_order": "sequential", "report": "individual"}, {"protocol": "legacy", "summariser": True}])
def test_every_turn_of_a_played_game_has_its_month(settings):
    async def embed(texts):
        return [[float(len(t) % 7 + 1), 1.0] for t in texts]

    config = CommonsConfig(months=3, **settings)
    players = {r: STRATEGIES["summariser" if r == "manager" else "sustainable"]() for r in Commons.roles(config)}
    table = Table(players, seed=2, embed=embed)
    outcome = asyncio.run(Commons(config, Prompts(Commons.prompt_dir)).play(table))
    assert table.turns and all(isinstance(t.metrics.get("month"), int) for t in table.turns)
    months = [t.metrics["month"] for t in table.turns]
    assert months == sorted(months) and set(months) == set(range(1, outcome["months_played"] + 1))
    phases = {t.phase for t in table.turns}
    assert {"harvest", "discuss"} <= phases
    for t in table.turns:  # the month a turn says is the month its prompt is about
        if t.phase in ("discuss", "summary", "memory_note", "memory_rate", "memory_insight"):
            assert t.metrics["month"] == max(h.metrics["month"] for h in table.turns[: t.index] if h.phase == "harvest")


def test_every_exported_commons_turn_has_its_month(server, write_study, tmp_path):
    fixed = {"n_agents": 3, "months": 2, "max_conversation_steps": 3, "embeddings": f"openai/months@{server.base_url}"}
    text = commons("commons_months", repeats=1, seed=3, fixed=fixed)
    path = write_study(text)
    db = tmp_path / "m.db"
    assert run_agora("run", str(path), "--db", str(db), "--quiet").returncode == 0
    out = tmp_path / "turns.csv"
    result = run_agora("export", str(path), "--db", str(db), "--table", "turns", "--format", "csv", "--out", str(out))
    assert result.returncode == 0, result.stderr
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {r["phase"] for r in rows} >= {"harvest", "discuss", "summary", "memory_note", "memory_rate", "memory_insight"}
    assert all(r["month"] not in ("", None) and float(r["month"]) in (1.0, 2.0) for r in rows)


def test_imported_turns_have_their_month(shared_fixtures):
    records = [r for r in import_logs(shared_fixtures / "govsim" / "ovanerven", "ov") if hasattr(r, "fields")]
    assert records
    for record in records:
        turns = record.fields["turn_records"]
        assert turns and all(t.metrics.get("month", 0) >= 1 for t in turns)
        assert {t.phase for t in turns} >= {"harvest", "discuss"}


@pytest.mark.parametrize("language", ["en", "ja"])
def test_every_scenario_file_holds_the_originals_focal_points(language):
    # the original's code (docs/fidelity.md, "What memories are retrieved for"): the harvest's
    # location and k, "harvesting" at the reflection; English code words in every language
    expected = {"fishery": ("lake", 10), "pasture": ("pasture", 10), "pollution": ("factory", 14), "trash": ("lake", 10)}
    for scenario, (focal, k) in expected.items():
        memory = get_scenario(scenario, language).memory
        assert (memory["harvest_focal"], memory["harvest_top_k"], memory["reflect_focal"]) == (focal, k, "harvesting")
        assert memory["harvest_focal_earlier"] and memory["reflect_focal_earlier"] not in ("", "harvesting")
