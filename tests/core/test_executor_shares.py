"""Issue 22 (a study's size): the Ray executor streams like the one-process runner. Its deal is a
rule applied game by game as the design is generated (every share an equal part, ±1, of every
seating; the same deal whatever is stored), the driver counts the design instead of listing it,
and each share's task generates the study and plays its own games. Ray itself is replaced by an
in-process stand-in here (tests/e2e/test_ray_executor.py runs the real one)."""

from __future__ import annotations

import collections
import sys
import types
from pathlib import Path

import pytest

from agorabench.core.executors import Share, dealt, run_ray, seating_positions
from agorabench.core.study import Study, load_study
from agorabench.store.store import Store
from support.helpers import ROOT
from support.studies import envy_points, sampled_seats, scripted

MODELS = [scripted("always-b"), scripted("self-max"), scripted("spiteful")]
SITUATION = {"peer_status": "leading", "margin": "marginal", "peer_move": "B"}

PARTS = """
name = "parts"
matchups = "all_pairs"
repeats = 3
[[parts]]
game = "envy.points"
[parts.grid]
matrix = ["M1", "M2", "M3"]
margin = ["marginal", "significant"]
[[parts]]
game = "envy.points"
[parts.grid]
matrix = ["M1", "M2"]
peer_status = ["lagging"]
[[models]]
name = "a"
spec = "strategy/self-max"
[[models]]
name = "b"
spec = "strategy/always-b"
[[models]]
name = "c"
spec = "strategy/random"
"""


def _study(tmp_path: Path, text: str, name: str = "s") -> Study:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return load_study(path)


def _balanced(study: Study, shares: int) -> dict[int, list[str]]:
    """The deal's ids per share, checked: every game once, every seating split ±1."""
    by_share: dict[int, list[str]] = collections.defaultdict(list)
    per_seating: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for share, spec in dealt(study, shares):
        assert 0 <= share < shares
        by_share[share].append(spec.id)
        per_seating[str(sorted(spec.seats.items()))][share] += 1
    ids = [g for share in by_share.values() for g in share]
    assert sorted(ids) == sorted(s.id for s in study.iter_specs())
    for seating, counts in per_seating.items():
        n = [counts[i] for i in range(shares)]
        assert max(n) - min(n) <= 1, (seating, n)
    return by_share


@pytest.mark.parametrize("shares", [1, 2, 3, 4, 7])
def test_every_share_gets_an_equal_part_of_every_seating(shares, tmp_path):
    for text in (envy_points("pairs", MODELS, repeats=5, grid={"matrix": ["M1", "M2", "M3"]}, fixed=SITUATION), PARTS, sampled_seats()):
        study = _study(tmp_path, text)
        first = _balanced(study, shares)
        assert _balanced(study, shares) == first  # the same deal every time (and in every process: no salted hash)
        sizes = [len(first.get(i, [])) for i in range(shares)]
        assert max(sizes) - min(sizes) <= len({str(sorted(s.seats.items())) for s in study.iter_specs()})


def test_a_seating_is_not_dealt_by_stride_over_the_grid(tmp_path):
    """Two shares, one repeat, the grid's last key with two values: a stride would give each
    share the same value of that key for every seating."""
    study = _study(tmp_path, envy_points("stride", MODELS, grid={"matrix": ["M1", "M2", "M3"], "margin": ["marginal", "significant"]}, fixed={"peer_status": "leading", "peer_move": "B"}))
    margins: dict[tuple[str, int], set[str]] = collections.defaultdict(set)
    for share, spec in dealt(study, 2):
        margins[(str(sorted(spec.seats.items())), share)].add(spec.config["margin"])
    assert any(len(m) == 2 for m in margins.values())


@pytest.mark.parametrize("path", sorted((ROOT / "studies").glob("*.toml")) + ["parts"], ids=str)
def test_positions_by_arithmetic_are_the_counted_ones(path, tmp_path):
    """Without ``sample`` or listed seats a game's place among its seating's games is computed
    (no memory per seating); it is the count the general rule keeps."""
    study = load_study(path) if path != "parts" else _study(tmp_path, PARTS)
    computed = [(spec.id, key, k) for spec, key, k in seating_positions(study)]
    counted = [(spec.id, key, k) for spec, key, k in seating_positions(study, counted=True)]
    assert computed == counted


def test_dealing_many_seatings_holds_nothing_per_seating(tmp_path):
    """100 models in ordered pairs, one game each (9,900 seatings): the deal's memory does not grow
    with them (as a list the design takes about 4 MB, a counter per seating about 1 MB)."""
    import tracemalloc

    study = _study(tmp_path, envy_points("many", [scripted(f"m{i}", "self-max") for i in range(100)], grid={"matrix": ["M1"]}, fixed=SITUATION))
    tracemalloc.start()
    try:
        n = sum(1 for _ in dealt(study, 4))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 9_900 and peak < 400_000, peak


class _RayError(Exception):
    pass


def _fake_ray(fail: set[int] = frozenset()) -> types.ModuleType:
    """Ray as far as run_ray uses it, running each task at once in this process; the shares in
    ``fail`` die without playing (as when Ray's retries are spent)."""
    ray = types.ModuleType("ray")
    ray.exceptions = types.SimpleNamespace(RayError=_RayError)
    ray.is_initialized = lambda: True

    def remote(**_options):
        def wrap(fn):
            def call(*args):
                share = args[3]
                return _RayError(f"share {share} died") if share in fail else fn(*args)

            return types.SimpleNamespace(remote=call)

        return wrap

    def get(ref):
        if isinstance(ref, _RayError):
            raise ref
        return ref

    ray.remote, ray.get = remote, get
    return ray


def _done(db: Path, name: str) -> set[str]:
    store = Store(db)
    try:
        return store.done_ids(name)
    finally:
        store.dispose()


def test_run_ray_never_lists_the_design_and_counts_a_failed_share(tmp_path, monkeypatch):
    """The driver and the shares' tasks never call ``Study.expand`` (a list as long as the
    design): counts and a failed share's unplayed games come from the deal, game by game."""
    path = tmp_path / "fan.toml"
    path.write_text(envy_points("fan", MODELS, repeats=4, grid={"matrix": ["M1", "M2", "M3"]}, fixed=SITUATION))  # 6 pairs x 3 x 4 = 72

    def listed(self):
        raise AssertionError("Study.expand was called: the whole design listed in memory")

    monkeypatch.setattr(Study, "expand", listed)
    db = tmp_path / "fan.db"
    monkeypatch.setitem(sys.modules, "ray", _fake_ray(fail={1}))
    counts, summary = run_ray(str(path), str(db), workers=3, concurrency=2)
    share1 = {spec.id for spec in Share(1, 3)(load_study(path))}
    assert len(share1) == 24
    assert counts["total"] == 72 and counts["skipped"] == 0 and counts["played"] == 48 and counts["errors"] == 0
    assert counts["not_played"] == 24 and counts["failed"] == ["_RayError: share 1 died"]
    assert _done(db, "fan") == {s.id for s in load_study(path).iter_specs()} - share1

    # the resume deals the same way: only the failed share has games left, and it plays them
    monkeypatch.setitem(sys.modules, "ray", _fake_ray())
    counts, summary = run_ray(str(path), str(db), workers=3, concurrency=2)
    assert (counts["total"], counts["skipped"], counts["played"], counts["not_played"], counts["failed"]) == (72, 48, 24, 0, [])
    assert [s["played"] for s in summary["shares"]] == [0, 24, 0]
    assert len(_done(db, "fan")) == 72
    counts, _ = run_ray(str(path), str(db), workers=3)
    assert (counts["total"], counts["skipped"], counts["played"]) == (72, 72, 0)
