"""Batch mode end to end (issue 39 §1): `agora run --batch` against the loopback batch APIs of
OpenAI and Anthropic (tests/support/batch_servers.py, whose items are answered by the live
routes' own function) and real SQLite. A study played live and in batches stores the same games;
a run stopped while its batch is open resumes it without submitting it again; an expired item is
asked again in the next round; a batch that fails whole is said in one line."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from agorabench.core.runner import Runner
from agorabench.core.seating import backend_options
from agorabench.core.study import load_study
from agorabench.models.batch import open_batch_client
from agorabench.store.batches import study_batches
from agorabench.store.cache import SQLCache
from agorabench.store.store import Store
from support.batch_servers import batch_server, batch_stats, control
from support.helpers import agora
from support.studies import envy_points, model, paper_grid, scripted, study_toml

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")  # the Anthropic SDK on the loopback's model name

SPECS = {"openai": "openai/gpt-4o-mini", "anthropic": "anthropic/claude-sonnet-4-5"}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-batch")


@pytest.fixture(scope="module")
def servers():
    """One loopback batch server per provider for the module; each test resets its behaviour."""
    with batch_server("openai") as openai_url, batch_server("anthropic") as anthropic_url:
        yield {"openai": openai_url, "anthropic": anthropic_url}


def remote(provider: str, url: str, batch: bool) -> dict:
    """The model on the loopback server; ``batch``: ``batch = true`` (a server named by its URL
    plays in batches only when its entry asks: ``--batch`` takes the providers' own APIs)."""
    key = {"api_key_env": "ANTHROPIC_API_KEY"} if provider == "anthropic" else {}
    return model("remote", SPECS[provider], base_url=url, max_tokens=64, batch=batch, batch_poll=0.02, batch_poll_max=0.1, **key)


def bargaining(provider: str, url: str, batch: bool = True) -> str:
    """GLEE bargaining, the model as Alice against always-reject over 2 rounds, 4 configurations:
    Alice offers, then answers Bob's offer (two calls a game, the second after the first)."""
    return study_toml(
        "batch_glee",
        "glee.bargaining",
        matchups="seats",
        seats=[{"alice": "remote", "bob": "rej"}],
        max_retries=1,
        grid={"delta_a": [0.8, 0.9], "money": [100, 10000]},
        fixed={"horizon": 2, "delta_b": 0.9},
        models=[remote(provider, url, batch), scripted("rej", "always-reject")],
    )


def envy(provider: str, url: str, batch: bool = True) -> str:
    return envy_points("batch_envy", [remote(provider, url, batch), scripted("b", "always-b")], grid=paper_grid(matrix=["M1", "M3"], margin=["marginal"], peer_move=["A", "D"]), seed=3)


def stored(db) -> tuple[list, list]:
    """Each game's status and outcome, each turn's text and action."""
    with sqlite3.connect(db) as con:
        games = con.execute("select id, status, outcome, error from games order by id").fetchall()
        turns = con.execute("select game_id, idx, role, raw, action, valid, retries from turns order by game_id, idx").fetchall()
    return games, turns


def fresh(url: str) -> dict:
    control(url, reset=True)
    return batch_stats(url)


def grew(url: str, before: dict, name: str) -> int:
    return batch_stats(url)[name] - before[name]


@pytest.mark.parametrize("provider, kind", [("openai", "bargaining"), ("anthropic", "bargaining"), ("openai", "envy")])
def test_live_and_batch_runs_store_the_same_games(provider, kind, servers, tmp_path, write_study, capsys):
    url = servers[provider]
    before = fresh(url)
    study = bargaining if kind == "bargaining" else envy
    live = write_study(study(provider, url, batch=False), "live.toml")
    batched = write_study(study(provider, url, batch=True), "batched.toml")  # batch is not part of a game's id
    rc, out, err = agora(capsys, "run", str(live), "--db", str(tmp_path / "live.db"), "--quiet", "--no-probe")
    assert rc == 0, out + err
    live_calls = grew(url, before, "requests")
    rc, out, err = agora(capsys, "run", str(batched), "--db", str(tmp_path / "batch.db"), "--quiet", "--no-probe")
    assert rc == 0, out + err
    assert grew(url, before, "requests") == live_calls  # batch mode made no live call
    games, turns = stored(tmp_path / "live.db")
    assert all(g[1] == "done" for g in games) and turns
    assert stored(tmp_path / "batch.db") == (games, turns)
    rounds = 2 if kind == "bargaining" else 3  # the longest chain of the model's calls in a game
    assert grew(url, before, "batches_created") == rounds
    assert f"batch: {rounds} round(s), {rounds} provider batch(es) of {live_calls} request(s)" in out
    store = Store(tmp_path / "batch.db")
    rows = study_batches(store, "batch_glee" if kind == "bargaining" else "batch_envy")
    store.dispose()
    assert [r.round for r in rows] == list(range(1, rounds + 1)) and all(r.done for r in rows) and sum(len(r.items) for r in rows) == live_calls


def runner_for(study, db) -> Runner:
    store = Store(db)
    return Runner(study, store, concurrency=2, cache=SQLCache(store), progress=False, probe=False, batch=True)


def test_a_run_stopped_with_its_batch_open_resumes_it_without_paying_again(servers, tmp_path, write_study):
    url = servers["openai"]
    before = fresh(url)
    control(url, polls=20)  # the first batch ends at its 20th poll (about 1.8 s of polling), long after the first run is stopped
    study = load_study(write_study(bargaining("openai", url)))
    db = tmp_path / "b.db"
    first = runner_for(study, db)

    async def stop_once_recorded():
        task = asyncio.create_task(first.run())
        for _ in range(500):  # until the batch row is written
            await asyncio.sleep(0.01)
            if study_batches(first.store, "batch_glee"):
                break
        await asyncio.sleep(0.03)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stop_once_recorded())
    first.store.dispose()
    assert grew(url, before, "batches_created") == 1
    store = Store(db)
    (row,) = study_batches(store, "batch_glee")
    store.dispose()
    assert not row.done and len(row.items) == 4 and row.status != "completed"
    control(url, reset=True)
    second = runner_for(study, db)
    stats = asyncio.run(second.run())
    second.store.dispose()
    assert (stats.done, stats.errors) == (4, 0)
    # the open batch was followed, not sent again: one more batch (round 2), eight requests in all
    assert grew(url, before, "batches_created") == 2
    bodies = batch_stats(url, bodies=True)["batch_bodies"][-8:]
    assert len({str(b) for b in bodies}) == 8 and second.seating.lockstep.summary()["followed"] == 1
    store = Store(db)
    assert all(r.done for r in study_batches(store, "batch_glee"))
    store.dispose()


def test_an_expired_request_is_asked_again_in_the_next_round(servers, tmp_path, write_study):
    url = servers["openai"]
    before = fresh(url)
    study = load_study(write_study(bargaining("openai", url)))
    runner = runner_for(study, tmp_path / "b.db")
    expired: list[str] = []

    def client(entry):
        c = open_batch_client(entry.model_spec, backend_options(entry))
        submit = c.submit

        async def first_item_expires(items):
            if not expired:  # the first batch's first request is never run before its window passes
                expired.append(items[0].custom_id)
                control(url, expire=expired)
                try:
                    return await submit(items)
                finally:
                    control(url, reset=True)
            return await submit(items)

        c.submit = first_item_expires
        return c

    runner.seating.open_batch_client = client
    stats = asyncio.run(runner.run())
    runner.store.dispose()
    assert (stats.done, stats.errors) == (4, 0)
    summary = runner.seating.lockstep.summary()
    assert summary["retried"] == 1 and summary["items"] == 9
    bodies = [str(b) for b in batch_stats(url, bodies=True)["batch_bodies"][-9:]]
    assert bodies[4:8].count(bodies[0]) == 1  # the expired request rode with round 2's
    assert grew(url, before, "batches_created") == 3 and runner.seating.lockstep.round == 3  # its game one round behind


def test_a_batch_that_fails_whole_is_said_in_one_line(servers, tmp_path, write_study, capsys):
    url = servers["openai"]
    before = fresh(url)
    control(url, fail="The organization has reached its enqueued token limit for this model.")
    path = write_study(bargaining("openai", url))
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "b.db"), "--quiet", "--no-probe")
    control(url, reset=True)
    assert rc == 1 and "4 errors" in out
    lines = [line for line in err.splitlines() if "enqueued token limit" in line]
    assert len(lines) == 1 and "error (4 games):" in lines[0] and "failed" in lines[0], err
    assert grew(url, before, "batches_created") == 1
    store = Store(tmp_path / "b.db")
    (row,) = study_batches(store, "batch_glee")
    store.dispose()
    assert row.done and row.status == "failed" and "enqueued token limit" in row.error


def test_the_batch_flag_names_a_model_it_leaves_live(servers, tmp_path, write_study, capsys):
    """`--batch` batches the providers' own APIs; a model on a server named by its URL plays live,
    said in one note (its entry's `batch = true` would send its batches there)."""
    url = servers["openai"]
    before = fresh(url)
    path = write_study(bargaining("openai", url, batch=False))
    rc, out, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "b.db"), "--quiet", "--no-probe", "--batch")
    assert rc == 0, out + err
    notes = [line for line in err.splitlines() if "plays live (--batch)" in line]
    assert len(notes) == 1 and f"model 'remote' plays live (--batch): the server at {url} may have no batch API" in notes[0]
    assert grew(url, before, "requests") == 8 and grew(url, before, "batches_created") == 0 and "batch:" not in out
