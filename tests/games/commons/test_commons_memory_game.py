"""The commons memory stream in play (``memory = "retrieved"``, the default; the rules themselves
are tested in test_memory.py): each month's memory calls are stored turns, each decision is shown
its system text and one prompt with at most ten (harvest) dated memories and no transcript, the
private outcome only in its own month, the agreed limit always; two runs retrieve the same
memories; the transcript variant gives version 5's prompts word for word; a study whose
``embeddings`` is an OpenAI-compatible server on 127.0.0.1 runs through the command line."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sqlite3

import pytest

from agorabench.conformance import RandomPlayer, play, scripted_players
from agorabench.core.game import Prompts
from agorabench.core.table import Table
from agorabench.games.commons.commons import Commons
from agorabench.games.commons.config import QUERY_PREFIX, CommonsConfig
from agorabench.games.commons.memory import month_dates
from agorabench.games.commons.strategies import STRATEGIES
from support.helpers import run_agora
from support.studies import commons

from support.embeddings import EmbeddingsServer, fake_vector

DATED = re.compile(r"^- (\d{4}-\d\d-\d\d): (.*)$", re.MULTILINE)


def fake_embed(calls: list[list[str]] | None = None):
    """A deterministic embeddings hook (a hash of the text); ``calls`` records each request."""

    async def embed(texts: list[str]) -> list[list[float]]:
        if calls is not None:
            calls.append(list(texts))
        return [fake_vector(t) for t in texts]

    return embed


def run(months: int = 4, strategy: str = "sustainable", embed=None, **cfg):
    config = CommonsConfig(months=months, **cfg)
    players = {r: STRATEGIES["summariser" if r == "manager" else strategy]() for r in Commons.roles(config)}
    table = Table(players, seed=1, embed=embed or fake_embed())
    game = Commons(config, Prompts(Commons.prompt_dir))
    outcome = asyncio.run(game.play(table))
    return outcome, table


def by_month(table: Table, role: str) -> dict[int, list]:
    """The role's turns grouped by month: a month starts at the role's harvest."""
    out: dict[int, list] = {}
    month = 0
    for t in table.turns:
        if t.role != role:
            continue
        if t.phase == "harvest":
            month = int(t.metrics["month"])
        out.setdefault(month, []).append(t)
    return out


def test_each_month_the_memory_calls_are_stored_turns():
    outcome, table = run(months=4)
    assert outcome["months_played"] == 4
    phases = {t.phase for t in table.turns}
    assert {"memory_note", "memory_rate", "memory_insight"} <= phases
    for role in ("agent_0", "agent_3"):
        months = by_month(table, role)
        for month in (1, 2, 3):
            seq = [t.phase for t in months[month]]
            # harvest, remark(s), then: planning note, its rating, interesting note, its rating,
            # the insights, one rating per insight (the scripted insights: two)
            assert seq[0] == "harvest" and "discuss" in seq
            tail = seq[seq.index("memory_note") :]
            assert tail == ["memory_note", "memory_rate", "memory_note", "memory_rate", "memory_insight", "memory_rate", "memory_rate"]
        # nothing is written after the last decision (no later prompt could show it)
        assert not {"memory_note", "memory_insight", "memory_rate"} & {t.phase for t in months[4]}
    # every memory call is one prompt after the system text, with its answer format marked
    for t in table.turns:
        if t.phase.startswith("memory_"):
            assert [m["role"] for m in t.messages] == ["system", "user"]
    notes = [t for t in table.turns if t.phase == "memory_note"]
    assert "keep in mind" in notes[0].messages[-1]["content"] and "interesting" in notes[5].messages[-1]["content"]
    rating = next(t for t in table.turns if t.phase == "memory_rate")
    assert "Thought: We agreed to take at most 10 each next month" in rating.messages[-1]["content"]
    assert rating.action == {"rating": 8}


def test_harvest_prompt_shows_dated_memories_and_no_transcript():
    outcome, table = run(months=6)
    for role in ("agent_0", "agent_4"):
        for month, turns in by_month(table, role).items():
            harvest = turns[0]
            assert [m["role"] for m in harvest.messages] == ["system", "user"]  # no earlier months
            text = harvest.messages[-1]["content"]
            lines = DATED.findall(text)
            assert 1 <= len(lines) <= 10
            dates = [d for d, _ in lines]
            assert dates == sorted(dates)  # listed by date, the always-included ones too
            assert f"Date: {month_dates(month).harvest:%Y-%m-%d}" in text
            # the stock, dated today; the private outcome never at a harvest
            assert (f"{month_dates(month).harvest:%Y-%m-%d}", "The lake now holds 100 tons of fish.") in lines
            assert "You asked to catch" not in text
            assert "Month" not in text and "John:" not in text and "Mayor" not in text
            # the agreed limit (every live one) from month 2 on
            limits = [d for d, t in lines if t.startswith("Minutes of the meeting: the fishers agreed to catch at most 10 tons")]
            if month > 1:
                assert limits and limits[-1] == f"{month_dates(month - 1).chat:%Y-%m-%d}"
                assert len(limits) == min(month - 1, 3 if month == 4 else 2)


def test_the_private_outcome_only_in_its_own_months_remarks():
    outcome, table = run(months=4)
    for role in ("agent_1", "agent_2"):
        for month, turns in by_month(table, role).items():
            for t in turns:
                text = t.messages[-1]["content"]
                outcomes = [(d, line) for d, line in DATED.findall(text) if line.startswith("You asked to catch")]
                if t.phase == "discuss":
                    assert outcomes == [(f"{month_dates(month).chat:%Y-%m-%d}", "You asked to catch 10 tons of fish and caught 10 tons.")]
                    assert len(DATED.findall(text)) <= 25  # five per focal point, at most five
                else:
                    assert outcomes == []


def test_two_runs_retrieve_the_same_memories_and_embed_each_text_once():
    calls: list[list[str]] = []
    _, first = run(months=4, embed=fake_embed(calls))
    texts = [t for c in calls for t in c]
    assert len(texts) == len(set(texts))  # the game asks for each distinct text once
    assert "" not in texts and QUERY_PREFIX in texts  # the empty context: the query prefix alone
    _, second = run(months=4)
    assert [t.messages for t in first.turns] == [t.messages for t in second.turns]


def test_recency_variant_changes_what_is_retrieved():
    # every text the same vector: relevance ties, so recency decides between equal importances
    async def flat(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    _, newest = run(months=6, strategy="free-rider", embed=flat)
    _, oldest = run(months=6, strategy="free-rider", embed=flat, memory_recency="original")
    assert [t.action for t in newest.turns if t.phase == "harvest"] == [t.action for t in oldest.turns if t.phase == "harvest"]
    shown = lambda table: [t.messages for t in table.turns if t.phase in ("harvest", "discuss", "memory_insight")]  # noqa: E731
    assert shown(newest) != shown(oldest)


def test_a_table_without_a_hook_uses_the_embedded_model():
    # conformance's play() builds a plain Table: the process's shared embedded model embeds
    p = play("commons", scripted_players("commons", CommonsConfig(months=2)), seed=3, config=CommonsConfig(months=2))
    assert p.outcome["months_played"] == 2 and any(t.phase == "memory_insight" for t in p.turns)
    assert all(t.valid for t in p.turns)


def test_retrieved_memory_needs_the_original_month_order():
    with pytest.raises(ValueError, match="month_order"):
        CommonsConfig(month_order="legacy")
    assert CommonsConfig(month_order="legacy", memory="transcript").memory == "transcript"
    legacy = CommonsConfig(protocol="legacy")
    assert (legacy.memory, legacy.reasoning, legacy.chat_wording) == ("transcript", "brief", "earlier")


def test_wording_defaults_and_variants():
    _, table = run(months=1)
    harvest = table.turns[0].messages[-1]["content"]
    assert "Think step by step before you decide." in harvest and "briefly" not in harvest
    remark = next(t for t in table.turns if t.phase == "discuss").messages[-1]["content"]
    assert "speaks first" not in remark and "rather than repeat" in remark
    _, table = run(months=1, reasoning="brief", chat_wording="earlier", memory="transcript")
    harvest = table.turns[0].messages[-1]["content"]
    assert "Reason step by step, briefly, before you decide." in harvest
    remark = next(t for t in table.turns if t.phase == "discuss").messages[-1]["content"]
    assert "John speaks first." in remark and "rather than repeat" not in remark


#: Plays of version 5 (before the memory stream), recorded from the ready studies' configurations
#: before the change: the settings that differ from today's defaults, the players, and the SHA-256
#: of the turns (role, phase, messages, raw answer) as JSON. The transcript variant with version
#: 5's wording must give them word for word.
VERSION_5 = [
    ({"system_prompt": "paraphrase_1"}, "scripted", "7a410d088d31e368ff9fb43a064512319bc553fc5bcf337420206d868c4da543"),
    ({"communication": False}, "scripted", "582fd0a20d78be87137942cebcc0189b0ce383110612fa1bd13c744cde2f6994"),
    ({"report": "individual"}, "scripted", "59927fc4611be768ef9921f8946f87cf6e716e4aa89cf9e5cd233a4633ed7f27"),
    ({"harvest_order": "sequential"}, "scripted", "c5f5db27799eae673dfdb4fb7da58981096cee88620495c85208b269fba40946"),
    ({"universalization": True}, "scripted", "2456f07dc3c800dca51ba79725ca7951a001e9830853c218cf59d49d59346718"),
    ({"language": "ja"}, "scripted", "3ed2af82ffe4be886384784a8373b2c023648515492f9c929dd0a0008cb2de4e"),
    ({"months": 15, "newcomer_month": 4}, "scripted", "3b3104e8de546dbc3a0368a4bf1bd961aa61f154fe2d45218bd71232b6de5ba3"),
    ({"language": "ja", "scenario": "pasture", "universalization": True}, "scripted", "e8da1b4c7472eb418d202a17d3f33870223c4193df9e23260a91d6a2b667c868"),
    ({"scenario": "pollution"}, "scripted", "555a2874e8100db920739befa3905b6397a35d802406d0aeb38ef3505a514639"),
    ({"scenario": "trash"}, "random", "a3be6499c842d45694cddd55ffd1dffafa52db56b00fde279cc4c9bb0bbb2bee"),
]
TRANSCRIPT_VARIANT = {"memory": "transcript", "reasoning": "brief", "chat_wording": "earlier"}


@pytest.mark.parametrize(("settings", "players", "digest"), VERSION_5, ids=[json.dumps(s, sort_keys=True) + p for s, p, _ in VERSION_5])
def test_transcript_variant_gives_version_5s_prompts_word_for_word(settings, players, digest):
    config = CommonsConfig(**settings, **TRANSCRIPT_VARIANT)
    seated = scripted_players("commons", config) if players == "scripted" else {r: RandomPlayer() for r in Commons.active_roles(config)}
    p = play("commons", seated, seed=3, config=config)
    turns = [{"role": t.role, "phase": t.phase, "messages": t.messages, "raw": t.raw} for t in p.turns]
    assert hashlib.sha256(json.dumps(turns, sort_keys=True, ensure_ascii=False).encode()).hexdigest() == digest


@pytest.fixture(scope="module")
def server():
    srv = EmbeddingsServer()
    yield srv
    srv.close()


def test_a_study_with_an_embeddings_server(server, write_study, tmp_path):
    spec = f"openai/ok@{server.base_url}"
    text = commons("commons_embed", repeats=1, seed=3, fixed={"scenario": "fishery", "n_agents": 3, "months": 3, "max_conversation_steps": 3, "embeddings": spec})
    path = write_study(text)
    db = tmp_path / "e.db"
    before = len(server.requests)
    result = run_agora("run", str(path), "--db", str(db), "--quiet")
    assert result.returncode == 0, result.stderr
    sent = [t for r in server.requests[before:] for t in r["input"]]
    assert sent and all(r["model"] == "ok" for r in server.requests[before:])
    assert len(sent) == len(set(sent))  # each text once in the process
    with sqlite3.connect(db) as con:
        phases = {row[0] for row in con.execute("select phase from turns")}
    assert {"harvest", "discuss", "memory_note", "memory_rate", "memory_insight"} <= phases
    # a spec that names no backend stops the run before any game, in one line
    bad = write_study(text.replace(spec, "nonsense"), "bad.toml")
    result = run_agora("run", str(bad), "--db", str(tmp_path / "b.db"), "--quiet")
    assert result.returncode != 0 and "embeddings" in result.stderr and "Traceback" not in result.stderr


def test_agora_show_prints_each_fresh_prompt_with_its_memories():
    from agorabench.analysis.transcript import render_game

    _, table = run(months=2)
    turns = [{"idx": t.index, "role": t.role, "phase": t.phase, "messages": t.messages, "raw": t.raw, "action": t.action, "valid": t.valid, "retries": t.retries, "error": t.error, "metrics": t.metrics} for t in table.turns]
    game = {"id": "g", "game": "commons", "study": "s", "status": "done", "repeat": 0, "seed": 1, "seats": {}, "config": {}}
    text = render_game(game, turns, roles={"agent_1"})
    assert text.count("[system]") == 1  # the system text once, then each prompt on its own
    assert text.count("(a fresh prompt: the system message, then only this)") == sum(1 for t in turns if t["role"] == "agent_1") - 1
    for phase in ("harvest", "discuss", "memory_note", "memory_rate", "memory_insight"):
        assert f"· {phase} ·" in text
    assert "- 2024-02-01: The lake now holds 100 tons of fish." in text  # the memories shown, dated
    assert "1) 2024-01-30: We agreed to take at most 10 each next month" in text  # the insight's numbered list
