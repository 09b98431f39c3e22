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
from agorabench.models.embedded import DEFAULT_STATE_CACHE_MB, EmbeddedBackend, default_threads, shared_embedded_backend, state_cache_limit
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
    from agorabench.core.runner import build_backend

    backend = build_backend(ModelEntry(name="smol", spec="local", state_cache_mb=48))
    assert backend.state_cache_bytes == 48 << 20
    assert backend._model().cache.capacity_bytes == 48 << 20


WAITS = """
from agorabench.models.embedded import EmbeddedBackend
EmbeddedBackend(n_threads=1, state_cache_bytes=0)._model()
"""


@pytest.mark.llm
@pytest.mark.parametrize(("policy", "spins"), [(None, "0"), ("ACTIVE", "30000000000")])
def test_waiting_threads_sleep_unless_the_environment_says_otherwise(policy, spins):
    """llama.cpp's OpenMP runtime reads its waiting policy once, when llama_cpp is first
    imported: it must see PASSIVE (spin count 0) unless the user chose a policy. OpenMP's own
    default spins for about 300,000 rounds, which stalls the demo on a busy machine."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"  # the runtime prints its settings when it loads
    if policy:
        env["OMP_WAIT_POLICY"] = policy
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
