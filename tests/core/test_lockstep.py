"""Batch mode's lockstep (core/lockstep.py) against an in-memory batch service
(tests/support/batch_fake.py) and real SQLite: rounds are the longest chain of calls, a study
stores the same games live and in batches, a stopped run follows its open batch instead of
paying again, expired items are asked again, failures end their games with the provider's words,
and the progress line shows the round and the open batches."""

from __future__ import annotations

import asyncio
import io
import sqlite3

import pytest

from agorabench.core.lockstep import CallWaves, Lockstep, worst_case
from agorabench.core.progress import ProgressView
from agorabench.core.runner import Runner
from agorabench.core.study import StudyError, load_study
from agorabench.core.table import Prompt, Table
from agorabench.models.base import CALL_CONTEXT, BackendError, CallContext, Completion, GenerationSettings, NoCache
from agorabench.models.model import Model
from agorabench.store.batches import open_batches, study_batches
from agorabench.store.cache import SQLCache
from agorabench.store.store import Store
from support.batch_fake import BatchService
from support.helpers import server_requests
from support.studies import envy_points, model, paper_grid, scripted, study_toml


class NoLive:
    """A backend no call may reach (batch mode sends none)."""

    serialized = False
    identity = "openai:fake-model"

    async def complete(self, messages, settings):
        raise AssertionError("a batch model made a live call")

    def classify_error(self, exc):
        return None

    def probe_target(self):
        return None

    async def aclose(self):
        return None


class MemoryCache:
    def __init__(self) -> None:
        self.data: dict[str, Completion] = {}

    def get(self, key):
        return self.data.get(key)

    def put(self, key, identity, completion):
        self.data[key] = completion


def lockstep_with(tmp_path, service: BatchService, **kw) -> tuple[Lockstep, Model, MemoryCache, Store]:
    store = Store(tmp_path / "l.db")
    cache = MemoryCache()
    lockstep = Lockstep(store, cache, "s", **kw)
    m = Model(NoLive(), GenerationSettings(), cache=cache)
    lockstep.attach(m, service.client(), "m", poll=0.01, poll_max=0.02)
    return lockstep, m, cache, store


async def chain(lockstep: Lockstep, m: Model, game: str, prompts: list[str], together: int = 1) -> list[str]:
    """A game whose decisions each ask ``together`` calls at once (a simultaneous move)."""
    lockstep.started(game)
    texts = []
    try:
        for i, prompt in enumerate(prompts):

            async def one(seat: int, prompt: str = prompt, i: int = i) -> str:
                CALL_CONTEXT.set(CallContext(game, f"seat{seat}"))
                c = await m.complete([{"role": "user", "content": f"{prompt} (seat {seat})"}], sample=f"{game}:{i}:{seat}")
                return c.text

            texts += await asyncio.gather(*(one(s) for s in range(together)))
    finally:
        lockstep.ended(game)
    return texts


def test_rounds_are_the_longest_chain_and_each_round_is_one_batch(tmp_path):
    service = BatchService()

    async def main():
        lockstep, m, cache, store = lockstep_with(tmp_path, service)
        try:
            out = await asyncio.gather(
                chain(lockstep, m, "g1", ["a"]),
                chain(lockstep, m, "g2", ["b", "c", "d"], together=2),
                chain(lockstep, m, "g3", ["e", "f"]),
            )
        finally:
            await lockstep.aclose()
        return out, lockstep, m, cache, store

    out, lockstep, m, cache, store = asyncio.run(main())
    assert [len(texts) for texts in out] == [1, 6, 2]
    assert lockstep.round == 3 and service.submissions == 3  # the longest chain: g2's three decisions
    assert [len(b.items) for b in service.batches.values()] == [4, 3, 2]  # round 1: g1, g2 (2 seats), g3
    assert m.calls == 9 and len(cache.data) == 9 and all(c.extra["service_tier"] == "batch" for c in cache.data.values())
    rows = study_batches(store, "s")
    assert [r.done for r in rows] == [True] * 3 and sorted(k for r in rows for k in r.items) == sorted(cache.data)
    assert open_batches(store, "s", m.backend.identity) == []
    assert lockstep.summary() == {"rounds": 3, "batches": 3, "followed": 0, "items": 9, "retried": 0, "failed": 0}


def test_calls_with_one_key_share_one_item_and_cached_answers_make_no_item(tmp_path):
    service = BatchService()

    async def main():
        lockstep, m, cache, _ = lockstep_with(tmp_path, service)
        messages = [{"role": "user", "content": "same question"}]
        cache.data[m.cache_key([{"role": "user", "content": "known"}], m.settings, 0)] = Completion("Answer: 1")
        try:
            a, b, c = await asyncio.gather(m.complete(messages), m.complete(messages), m.complete([{"role": "user", "content": "known"}]))
        finally:
            await lockstep.aclose()
        return a, b, c, m

    a, b, c, m = asyncio.run(main())
    assert service.submissions == 1 and [len(x.items) for x in service.batches.values()] == [1]
    assert a.text == b.text and a is not b and c.cached and m.cache_hits == 1


def test_a_game_a_person_plays_calls_live(tmp_path):
    """A person should not wait for a batch: a game started as not batched calls the backend."""
    service = BatchService()

    class Live(NoLive):
        async def complete(self, messages, settings):
            return Completion("Answer: 3", 5, 2)

    async def main():
        store = Store(tmp_path / "p.db")
        cache = MemoryCache()
        lockstep = Lockstep(store, cache, "s")
        m = Model(Live(), GenerationSettings(), cache=cache)
        lockstep.attach(m, service.client(), "m")
        lockstep.started("person-game", batched=False)
        CALL_CONTEXT.set(CallContext("person-game", "buyer"))
        try:
            return await m.complete([{"role": "user", "content": "hello"}]), m
        finally:
            lockstep.ended("person-game")
            await lockstep.aclose()

    c, m = asyncio.run(main())
    assert c.text == "Answer: 3" and service.submissions == 0 and m.calls == 1


def test_polling_backs_off_by_half_up_to_its_limit(tmp_path):
    service = BatchService(polls_to_end=7)
    waits: list[float] = []

    async def main():
        lockstep, m, _, _ = lockstep_with(tmp_path, service)

        async def recorded(delay):
            waits.append(delay)
            await asyncio.sleep(0)

        lockstep.sleep = recorded
        lane = lockstep._lanes[id(m)]
        lane.poll, lane.poll_max = 2.0, 5.0
        try:
            await m.complete([{"role": "user", "content": "x"}])
        finally:
            await lockstep.aclose()

    asyncio.run(main())
    assert waits == pytest.approx([2.0, 3.0, 4.5, 5.0, 5.0, 5.0, 5.0])  # batch_poll, x1.5 each time, at most batch_poll_max


def test_a_poll_that_fails_for_a_while_is_tried_again(tmp_path):
    service = BatchService(poll_errors=3)

    async def main():
        lockstep, m, _, _ = lockstep_with(tmp_path, service)
        try:
            return await m.complete([{"role": "user", "content": "x"}])
        finally:
            await lockstep.aclose()

    assert asyncio.run(main()).text.startswith("Answer:") and service.poll_errors == 0 and service.submissions == 1


def test_call_waves_count_a_games_rounds():
    """The plan's count: each wave waits for the one before; a simultaneous move is one wave."""

    class Says:
        def __init__(self, text):
            self.text = text

        async def act(self, request):
            from agorabench.core.table import Reply

            return Reply(text=self.text)

    from typing import ClassVar, Literal

    from agorabench.core.actions import Action

    class Pick(Action):
        response_format: ClassVar = "json"
        choice: Literal["left", "right"]

    async def play():
        waves = CallWaves()
        table = Table({"a": waves.wrap(Says('{"choice": "left"}')), "b": waves.wrap(Says("no")), "c": Says('{"choice": "right"}')}, seed=1, max_retries=1)
        await table.ask_each({"a": (Prompt("Pick."), Pick, None), "b": (Prompt("Pick."), Pick, None), "c": (Prompt("Pick."), Pick, None)})
        await table.ask("a", Prompt("Again."), Pick)
        return waves.waves

    # wave 1: a and b together; wave 2: b's re-ask; wave 3: a's second decision (c is scripted)
    assert asyncio.run(play()) == 3


def test_worst_case_prices_input_and_the_output_bound_at_the_batch_price():
    from agorabench.models.batch import BatchItem
    from agorabench.models.pricing import Pricing

    m = Model(NoLive(), GenerationSettings(max_tokens=100), pricing=Pricing(2.0, 8.0))
    items = [BatchItem("k1", [{"role": "user", "content": "x" * 400}], m.settings), BatchItem("k2", [{"role": "user", "content": "y" * 40}], GenerationSettings(max_tokens=50))]
    dollars, tokens = worst_case(m, items)
    assert tokens == 100 + 10 + 100 + 50
    assert dollars == pytest.approx((110 * 1.0 + 150 * 4.0) / 1e6)  # half of each standard price


# -- through the runner ------------------------------------------------------------------------

def envy(url: str, **settings) -> str:
    remote = model("remote", "openai/fake", base_url=url, max_tokens=16, batch_poll=0.01, batch_poll_max=0.05, **settings)
    return envy_points("batched_envy", [remote, scripted("b", "always-b")], grid=paper_grid(matrix=["M1", "M2"], margin=["marginal"], peer_move=["A", "D"]), seed=3)


def bargaining(url: str, **settings) -> str:
    """GLEE bargaining, the model as Alice against always-reject over 2 rounds: its answers (the
    server's "Answer: N") are no offers, so each decision is asked again once: chains of 4 calls."""
    remote = model("remote", "openai/fake", base_url=url, max_tokens=16, batch_poll=0.01, batch_poll_max=0.05, **settings)
    return study_toml(
        "batched_glee",
        "glee.bargaining",
        matchups="seats",
        seats=[{"alice": "remote", "bob": "rej"}],
        max_retries=1,
        stop_after_invalid=0,
        grid={"delta_a": [0.8, 0.9], "money": [100, 10000]},
        fixed={"horizon": 2, "delta_b": 0.9},
        models=[remote, scripted("rej", "always-reject")],
    )


def stored(db) -> tuple[list, list]:
    with sqlite3.connect(db) as con:
        games = con.execute("select id, status, outcome, error from games order by id").fetchall()
        turns = con.execute("select game_id, idx, role, raw, action, valid, retries from turns order by game_id, idx").fetchall()
    return games, turns


def batch_runner(study, db, service: BatchService, **kw) -> Runner:
    store = Store(db)
    runner = Runner(study, store, concurrency=2, cache=SQLCache(store), progress=False, probe=False, batch=kw.pop("batch", True), **kw)
    runner.seating.open_batch_client = lambda entry: service.client(provider="openai")
    return runner


def run(runner: Runner):
    try:
        return asyncio.run(runner.run())
    finally:
        runner.store.dispose()


@pytest.mark.parametrize("kind", ["envy", "bargaining"])
def test_a_study_stores_the_same_games_live_and_in_batches(kind, tmp_path, write_study, fake_openai):
    url, stats = fake_openai()
    study = load_study(write_study(envy(url) if kind == "envy" else bargaining(url)))
    batched = load_study(write_study(envy(url, batch=True) if kind == "envy" else bargaining(url, batch=True), "batched.toml"))  # batch: not in a game's id
    live_store = Store(tmp_path / "live.db")
    live = asyncio.run(Runner(study, live_store, concurrency=3, cache=SQLCache(live_store), progress=False, probe=False).run())
    live_store.dispose()
    requests = server_requests(stats)
    service = BatchService()
    runner = batch_runner(batched, tmp_path / "batch.db", service)
    stats_b = run(runner)
    assert server_requests(stats) == requests  # no live call in batch mode
    assert (stats_b.done, stats_b.errors) == (live.done, live.errors) and live.done == live.total
    games_live, turns_live = stored(tmp_path / "live.db")
    games_batch, turns_batch = stored(tmp_path / "batch.db")
    assert games_batch == games_live and turns_batch == turns_live
    assert runner.models["remote"].calls == sum(len(b.items) for b in service.batches.values()) == requests
    sizes = [len(b.items) for b in service.batches.values()]
    if kind == "bargaining":  # two decisions of Alice, each asked again once: four rounds, every game in each
        assert runner.seating.lockstep.round == 4 and sizes == [4, 4, 4, 4]
    else:  # 16 games: 8 with the model as the focal player (three decisions each), 8 as the passive peer
        assert live.total == 16 and runner.seating.lockstep.round == 3 and sizes == [8, 8, 8]


def test_a_stopped_run_follows_its_open_batch_and_never_submits_it_again(tmp_path, write_study):
    study = load_study(write_study(bargaining("http://127.0.0.1:9/v1", batch=True)))
    service = BatchService(hold=True)
    db = tmp_path / "b.db"
    runner = batch_runner(study, db, service)

    async def stop_after_the_first_batch():
        service.submitted_event = asyncio.Event()
        task = asyncio.create_task(runner.run())
        await asyncio.wait_for(service.submitted_event.wait(), 10)
        await asyncio.sleep(0.05)  # polled a few times, still open
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stop_after_the_first_batch())
    runner.store.dispose()
    assert service.submissions == 1
    store = Store(db)
    (row,) = study_batches(store, "batched_glee")
    assert not row.done and row.status == "in_progress" and len(row.items) == 4
    store.dispose()
    service.hold = False  # the provider finishes the batch meanwhile
    again = batch_runner(study, db, service)
    stats = run(again)
    assert stats.done == 4 and stats.errors == 0
    assert service.asked[row.items[0]] == 1 and all(service.asked[k] == 1 for k in row.items)  # never asked twice
    assert service.submissions == 4  # the followed batch and the three rounds after it
    assert again.seating.lockstep.summary()["followed"] == 1 and again.seating.lockstep.summary()["batches"] == 3
    store = Store(db)
    assert all(r.done for r in study_batches(store, "batched_glee"))
    store.dispose()
    # a third run finds every game done: nothing is played, nothing submitted
    third = batch_runner(study, db, service)
    assert run(third).skipped == 4 and service.submissions == 4


def test_an_expired_item_is_asked_again_in_the_next_round(tmp_path, write_study):
    study = load_study(write_study(bargaining("http://127.0.0.1:9/v1", batch=True)))
    service = BatchService(expire_once=1)  # the first item of the first batch expires once
    runner = batch_runner(study, tmp_path / "b.db", service)
    stats = run(runner)
    assert stats.done == 4 and stats.errors == 0
    (key,) = service.expire
    assert service.asked[key] == 2 and runner.seating.lockstep.summary()["retried"] == 1
    batches = list(service.batches.values())
    assert [len(b.items) for b in batches[:2]] == [4, 4] and key in [i.custom_id for i in batches[1].items]  # asked with round 2's items
    assert runner.seating.lockstep.round == 5 and len(batches[-1].items) == 1  # its game is one round behind the others


def test_a_batch_that_fails_whole_ends_its_games_with_the_providers_words(tmp_path, write_study):
    study = load_study(write_study(bargaining("http://127.0.0.1:9/v1", batch=True)))
    service = BatchService(fail_next="yes")
    runner = batch_runner(study, tmp_path / "b.db", service)
    stats = run(runner)
    assert stats.errors == 4 and stats.done == 0 and service.submissions == 1
    (message,) = set(stats.error_messages)
    assert message.endswith(": batch batch_1 failed: Batch batch_1 failed: the input file holds a line that is not a request.") and "\n" not in message
    store = Store(tmp_path / "b.db")
    (row,) = study_batches(store, "batched_glee")
    assert row.done and row.status == "failed" and "not a request" in row.error
    store.dispose()


def test_an_item_refused_for_good_ends_only_its_game(tmp_path, write_study):
    study = load_study(write_study(bargaining("http://127.0.0.1:9/v1", batch=True)))
    service = BatchService(refuse_with={"$10,000": "Invalid value for 'max_tokens': too large."})
    runner = batch_runner(study, tmp_path / "b.db", service)
    stats = run(runner)
    assert stats.errors == 2 and stats.done == 2
    assert all("errored: Invalid value for 'max_tokens': too large." in m for m in stats.error_messages)
    assert runner.seating.lockstep.summary()["failed"] == 2


def test_a_refused_submission_fails_its_calls_and_a_refused_key_stops_the_model(tmp_path, write_study):
    study = load_study(write_study(bargaining("http://127.0.0.1:9/v1", batch=True)))
    service = BatchService(refuse_submit=BackendError("HTTP 401: Incorrect API key provided.", retryable=False, fatal=True))
    runner = batch_runner(study, tmp_path / "b.db", service)
    stats = run(runner)
    assert stats.errors == 4 and service.submissions == 0
    assert runner.models["remote"].dead and "Incorrect API key" in runner.models["remote"].dead


def test_progress_shows_the_round_and_each_open_batch(tmp_path, write_study):
    study = load_study(write_study(bargaining("http://127.0.0.1:9/v1", batch=True)))
    service = BatchService(polls_to_end=3)
    out = io.StringIO()
    store = Store(tmp_path / "b.db")
    runner = Runner(study, store, concurrency=2, cache=SQLCache(store), progress=ProgressView(stream=out, rich=False, plain_interval=0.005, width=400), probe=False, batch=True)
    runner.seating.open_batch_client = lambda entry: service.client()
    asyncio.run(runner.run())
    store.dispose()
    text = out.getvalue()
    assert "batches: round 1, 1 batch(es), 1 open; remote batch_1 in_progress 0/4 (ok 0, errored 0, expired 0)" in text
    assert "batches: round 4, 4 batch(es)" in text.splitlines()[-1]


def test_batch_mode_asks_for_a_batch_api_and_the_response_cache(tmp_path, write_study, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    text = bargaining("http://127.0.0.1:9/v1").replace('spec = "openai/fake"', 'spec = "deepseek/deepseek-chat"').replace('base_url = "http://127.0.0.1:9/v1"\n', "")
    entry_asks = load_study(write_study(text.replace("max_tokens = 16", "max_tokens = 16\nbatch = true"), "a.toml"))
    store = Store(tmp_path / "a.db")
    with pytest.raises(StudyError) as err:
        Runner(entry_asks, store, progress=False, probe=False).check_models()
    assert "model 'remote' (batch = true)" in str(err.value) and "deepseek has no batch API" in str(err.value) and "\n" not in str(err.value)
    flag = Runner(load_study(write_study(text, "b.toml")), store, progress=False, probe=False, batch=True)
    flag.check_models()
    assert flag.seating.lockstep is None and any("model 'remote' plays live (--batch): only OpenAI's, Anthropic's and Gemini's own APIs take batches" in n for n in flag.notes)
    # --batch takes a provider's own API, not a server named by its URL, which batch = true may name
    url_named = Runner(load_study(write_study(bargaining("http://127.0.0.1:9/v1"), "u.toml")), store, progress=False, probe=False, batch=True)
    url_named.check_models()
    assert url_named.seating.lockstep is None and any("the server at http://127.0.0.1:9/v1 may have no batch API" in n for n in url_named.notes)
    own = Runner(load_study(write_study(bargaining("http://127.0.0.1:9/v1").replace('base_url = "http://127.0.0.1:9/v1"\n', ""), "o.toml")), store, progress=False, probe=False, batch=True)
    own.seating.open_batch_client = lambda entry: BatchService().client()
    own.check_models()
    assert own.seating.lockstep is not None and own.models["remote"].batcher is not None and not own.notes
    no_cache = Runner(load_study(write_study(bargaining("http://127.0.0.1:9/v1", batch=True), "c.toml")), store, cache=NoCache(), progress=False, probe=False, batch=True)
    no_cache.seating.open_batch_client = lambda entry: BatchService().client()
    no_cache.check_models()  # a check of the models alone passes (the process executor's driver makes one)
    with pytest.raises(StudyError, match="model 'remote': batch mode keeps each batch's answers in the response cache; leave out --no-cache"):
        asyncio.run(no_cache.run())
    store.dispose()
