"""The embedded model's settings: how many llama.cpp threads, how threads wait, and the bound
on the prefix-state cache (a study-file setting, an environment variable and a default)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agorabench.core.study import ModelEntry
from agorabench.models import embedded
from agorabench.models.base import BackendError, GenerationSettings
from agorabench.models.embedded import DEFAULT_STATE_CACHE_MB, EmbeddedBackend, FreeCores, default_threads, shared_embedded_backend, state_cache_limit, thread_range
from support.helpers import run_agora
from support.studies import envy_points, model, paper_grid, scripted


def cache_study(**smol_settings) -> str:
    """One game pair: the embedded model (with ``smol_settings``) against always-B, on M2."""
    smol = model("smol", "local", max_tokens=24, constrained=True, **smol_settings)
    grid = paper_grid(matrix=["M2"], peer_status=["lagging"], margin=["significant"], peer_move=["B"])
    return envy_points("cachebound", [smol, scripted("b", "always-b")], grid=grid)


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (3, 1), (4, 2), (8, 4), (64, 4)])
def test_thread_count_follows_the_usable_cores(monkeypatch, cores, threads):
    monkeypatch.delenv("AGORA_THREADS", raising=False)
    monkeypatch.setattr(embedded.os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert default_threads() == threads


@pytest.mark.parametrize(("cores", "fewest", "most"), [(1, 1, 1), (2, 1, 2), (3, 1, 3), (4, 2, 4), (8, 4, 4), (64, 4, 4)])
def test_a_call_may_take_the_free_cores_unless_a_count_is_set(monkeypatch, cores, fewest, most):
    monkeypatch.delenv("AGORA_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setattr(embedded.os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert thread_range() == (fewest, most)
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")  # sleeping threads: more of them are slower
    assert thread_range() == (fewest, fewest)
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setenv("AGORA_THREADS", "3")
    assert thread_range() == (3, 3)
    assert EmbeddedBackend(n_threads=2, state_cache_bytes=0).thread_range == (2, 2)


def test_free_cores_are_the_cores_less_the_other_processes_cpu(monkeypatch):
    """Others' CPU = the machine's busy CPU time less this process's own, over the wall time."""
    monkeypatch.setattr(embedded.os, "sched_getaffinity", lambda pid: set(range(2)))
    readings = iter([(100.0, 10.0, 0.0), (101.5, 10.5, 1.0), (101.5, 10.5, 1.01), (103.5, 11.5, 2.0), (103.5, 13.5, 3.0)])
    monkeypatch.setattr(FreeCores, "_reading", lambda self: next(readings))
    gauge = FreeCores()
    assert gauge.free() == pytest.approx(1.0)  # 1.5 s busy, 0.5 s of it ours: one core taken
    assert gauge.free() is None  # 10 ms later: too short to say
    assert gauge.free() == pytest.approx(1.0)  # measured from the older reading: 2 s busy, 1 s ours
    assert gauge.free() == pytest.approx(2.0)  # all the busy time was ours (never below zero)


def test_each_call_takes_the_threads_the_free_cores_allow(monkeypatch):
    backend = EmbeddedBackend(state_cache_bytes=0)
    backend.thread_range = (1, 2)

    class Gauge:
        def __init__(self, values):
            self.values = iter(values)

        def free(self):
            return next(self.values)

    backend._free_cores = Gauge([1.95, 1.5, None, 0.2, 2.0, 7.0])
    assert [backend._threads_now() for _ in range(6)] == [2, 1, 1, 1, 2, 2]


def test_the_first_call_already_takes_the_free_cores(monkeypatch):
    """The gauge's first reading is made with the backend, so the first call (after the model's
    loading, all of it this process's own CPU time) can say how many cores are free; read only
    after loading, it came too soon after and the first call ran on the fewest threads."""
    monkeypatch.delenv("AGORA_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setattr(embedded.os, "sched_getaffinity", lambda pid: set(range(2)))
    readings = iter([(100.0, 1.0, 0.0), (100.4, 1.4, 0.4)])  # 0.4 s of loading, all ours
    monkeypatch.setattr(FreeCores, "_reading", lambda self: next(readings))
    backend = EmbeddedBackend(state_cache_bytes=0)
    assert backend.thread_range == (1, 2)
    assert backend._threads_now() == 2


@pytest.mark.llm
def test_answers_do_not_depend_on_the_thread_count():
    """One call on one thread, the next on two, and back: the texts are those of a backend fixed
    at one thread (each llama.cpp thread computes whole rows), and the switch is counted."""
    settings = GenerationSettings(temperature=0.0, max_tokens=24, seed=0)
    fixed = EmbeddedBackend(n_threads=1, state_cache_bytes=0)
    moving = EmbeddedBackend(n_threads=1, state_cache_bytes=0)
    moving.thread_range = (1, 2)

    class Gauge:
        values = iter([2.0, 1.0, 2.0])

        def free(self):
            return next(self.values)

    moving._model()
    moving._free_cores = Gauge()
    for turns in (1, 2, 3):
        assert moving._run(_messages(turns), settings).text == fixed._run(_messages(turns), settings).text
    stats = moving.decode_stats()
    assert (stats["calls_on_2_threads"], stats["calls_on_1_threads"]) == (2, 1)
    import llama_cpp.llama_cpp as lc

    assert lc.llama_n_threads(moving._llama._ctx.ctx) == 2


def test_agora_threads_overrides_and_a_bad_value_is_one_line(monkeypatch):
    monkeypatch.setattr(embedded.os, "sched_getaffinity", lambda pid: set(range(2)))
    monkeypatch.setenv("AGORA_THREADS", "3")
    assert default_threads() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("AGORA_THREADS", bad)
        with pytest.raises(BackendError) as err:
            default_threads()
        assert str(err.value) == f"AGORA_THREADS={bad!r}: expected a whole number, at least 1"


def test_cache_bound_default_environment_and_setting(monkeypatch):
    monkeypatch.delenv("AGORA_STATE_CACHE_MB", raising=False)
    assert DEFAULT_STATE_CACHE_MB <= 512
    assert state_cache_limit() == DEFAULT_STATE_CACHE_MB << 20
    monkeypatch.setenv("AGORA_STATE_CACHE_MB", "0")
    assert state_cache_limit() == 0
    assert state_cache_limit(64) == 64 << 20  # the study file's setting wins
    monkeypatch.setenv("AGORA_STATE_CACHE_MB", "lots")
    with pytest.raises(BackendError) as err:
        state_cache_limit()
    assert str(err.value) == "AGORA_STATE_CACHE_MB='lots': expected a whole number, at least 0"


def test_cache_setting_leaves_game_ids_alone():
    plain = ModelEntry(name="smol", spec="local")
    bounded = ModelEntry(name="smol", spec="local", state_cache_mb=32)
    assert "state_cache_mb" in ModelEntry.RUN_ONLY
    assert plain.model_dump(exclude=ModelEntry.RUN_ONLY) == bounded.model_dump(exclude=ModelEntry.RUN_ONLY)


def test_bad_cache_setting_in_a_study_file_is_one_line(write_study, tmp_path):
    study = write_study(cache_study(state_cache_mb=-5))
    result = run_agora("run", str(study), "--db", str(tmp_path / "x.db"), "--quiet")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "models.0.state_cache_mb" in lines[0] and "greater than or equal to 0" in lines[0], result.stderr


def test_bad_cache_environment_stops_the_run_with_one_line(write_study, tmp_path):
    study = write_study(cache_study())
    result = run_agora("run", str(study), "--db", str(tmp_path / "x.db"), "--quiet", env={"AGORA_STATE_CACHE_MB": "1.5GB"})
    assert result.returncode == 2
    assert result.stderr.strip() == "agora: error: model 'smol': AGORA_STATE_CACHE_MB='1.5GB': expected a whole number, at least 0"


@pytest.mark.llm
def test_cache_bound_from_the_study_file_reaches_llama_cpp():
    from agorabench.core.seating import build_backend

    backend = build_backend(ModelEntry(name="smol", spec="local", state_cache_mb=48))
    assert backend.state_cache_bytes == 48 << 20
    assert backend._model().cache.capacity_bytes == 48 << 20


WAITS = """
from agorabench.models import embedded
embedded.usable_cores = lambda: 2
embedded.EmbeddedBackend(state_cache_bytes=0)._model()
"""


@pytest.mark.llm
@pytest.mark.parametrize(("policy", "threads", "spins"), [(None, "1", "0"), ("ACTIVE", "1", "30000000000"), (None, None, "300000")])
def test_waiting_threads_sleep_unless_the_environment_says_otherwise(policy, threads, spins):
    """llama.cpp's OpenMP runtime reads its waiting policy once, when llama_cpp is first
    imported: with a thread count fixed (here ``AGORA_THREADS=1``) it must see PASSIVE (spin
    count 0) unless the user chose a policy; where a call may take a free core (no count set, two
    cores), OpenMP's own default (about 300,000 spins, then sleep): threads woken from sleep at
    every step made two threads slower than one."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "AGORA_THREADS")}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"  # the runtime prints its settings when it loads
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    if threads:
        env["AGORA_THREADS"] = threads
    out = subprocess.run([sys.executable, "-c", WAITS], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert f"GOMP_SPINCOUNT = '{spins}'" in out.stderr, out.stderr


def _messages(turns: int) -> list[dict[str, str]]:
    """A growing transcript, each one a prefix of the next (as a game's turns are)."""
    out = [{"role": "system", "content": "You answer with one letter, A or B."}]
    for i in range(turns):
        out.append({"role": "user", "content": f"Round {i + 1}: the other player chose B. Your choice?"})
        if i < turns - 1:
            out.append({"role": "assistant", "content": "A"})
    return out


@pytest.mark.llm
def test_cache_holds_no_more_than_its_bound_and_answers_do_not_change():
    """Every byte a saved state holds counts against the bound (llama-cpp-python's own cache
    counts only llama.cpp's part: each state also held a 100 MB copy of the logits array), and
    answers restored from a saved state are the ones computed without the cache."""
    settings = GenerationSettings(temperature=0.0, max_tokens=8, seed=0)
    bound = 24 << 20
    cached = EmbeddedBackend(n_threads=1, state_cache_bytes=bound)
    plain = EmbeddedBackend(n_threads=1, state_cache_bytes=0)
    for turns in (1, 2, 3, 2):
        with_cache = cached._run(_messages(turns), settings)
        without = plain._run(_messages(turns), settings)
        assert with_cache.text == without.text
        cache = cached._llama.cache
        held = sum(int(s.llama_state_size) + s.scores.nbytes + s.input_ids.nbytes for s in cache.cache_state.values())
        assert 0 < held <= bound
    assert len(cached._llama.cache.cache_state) >= 2  # the bound still leaves room for several states
    assert plain._llama.cache is None


@pytest.mark.llm
def test_shared_backend_keys_on_the_cache_bound():
    a = shared_embedded_backend(n_threads=1, state_cache_mb=16)
    assert shared_embedded_backend(n_threads=1, state_cache_mb=16) is a
    assert shared_embedded_backend(n_threads=1, state_cache_mb=32) is not a
    assert a.state_cache_bytes == 16 << 20
