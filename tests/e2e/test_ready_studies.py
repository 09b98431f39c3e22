"""Every ready study in studies/, played by scripted players on a small sample of its design:
it runs, every export (CSV and Parquet, games and turns) works, and no prompt names a scripted
player's strategy unless a display name asks for it."""

from __future__ import annotations

import re

import pandas as pd
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from agorabench.analysis.frames import export
from agorabench.core.runner import run_study
from agorabench.core.study import load_study
from agorabench.families import strategies
from agorabench.store.store import Store
from support.helpers import ROOT
from support.studies import envy_points, toml_text as _toml
from support.studies import scripted as scripted_player

READY = sorted((ROOT / "studies").glob("*.toml"))


def scripted(path, tmp_path, sample: int = 1):
    """The study with every LLM replaced by a strategy all its games know, every strategy
    renamed to a made-up name (``zqx<i>``), one repeat and ``sample`` configurations per seating.
    Returns the study and {made-up name: strategy key}."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    games = [p["game"] for p in data.get("parts", [])] or [data["game"]]
    common = set.intersection(*(set(strategies(g)) for g in games))
    fill = "random" if "random" in common else sorted(common)[0]
    renamed, keys = {}, {}
    for i, m in enumerate(data["models"]):
        if not m["spec"].startswith("strategy/"):
            m["spec"] = f"strategy/{fill}"
            for k in ("constrained", "max_tokens"):
                m.pop(k, None)
        if not m.get("display_name"):
            renamed[m["name"]] = m["name"] = f"zqx{i}"
            keys[m["name"]] = m["spec"].split("/", 1)[1]
    data["seats"] = [{r: renamed.get(n, n) for r, n in seat.items()} for seat in data.get("seats", [])]
    for part in data.get("parts", []):  # a part's own seats name the models too
        if part.get("seats"):
            part["seats"] = [{r: renamed.get(n, n) for r, n in seat.items()} for seat in part["seats"]]
    data["repeats"], data["sample"] = 1, sample
    out = tmp_path / path.name
    out.write_text(_toml(data), encoding="utf-8")
    return load_study(out), keys


@pytest.mark.parametrize("path", READY, ids=[p.stem for p in READY])
def test_ready_study_runs_exports_and_names_no_strategy(path, tmp_path):
    study, keys = scripted(path, tmp_path)
    db = tmp_path / "s.db"
    stats, _ = run_study(study, db, concurrency=4, progress=False)
    assert stats.done == stats.total > 0 and stats.errors == 0, stats.error_messages
    store = Store(db)
    try:
        for table in ("games", "turns"):
            for fmt in ("csv", "parquet"):
                out = tmp_path / f"{table}.{fmt}"
                n = export(store, study.name, table, fmt, str(out))
                back = pd.read_csv(out) if fmt == "csv" else pd.read_parquet(out)
                assert len(back) == n > 0
        leaks = [*keys, *(f"strategy/{k}" for k in keys.values()), *(k for k in keys.values() if "-" in k)]
        pattern = re.compile("|".join(re.escape(x) for x in leaks), re.IGNORECASE)
        for turn in store.turns(study.name) if leaks else []:
            for message in turn["messages"]:
                found = pattern.search(message["content"])
                assert found is None, f"{path.stem}: {turn['role']} was shown {found.group()!r}"
    finally:
        store.dispose()


GLEE_MIXED = """
name = "mixed"
game = "glee.bargaining"
matchups = "same_model"
[grid]
horizon = [3, "inf"]
[fixed]
infinite_rounds = 4
[[models]]
name = "r"
spec = "strategy/always-reject"
"""


def test_parquet_export_of_finite_and_infinite_horizons_via_the_cli(write_study, tmp_path, capsys):
    from support.helpers import agora

    path = write_study(GLEE_MIXED)
    db = tmp_path / "m.db"
    assert agora(capsys, "run", str(path), "--db", str(db), "--quiet")[0] == 0
    out = tmp_path / "games.parquet"
    rc, _, err = agora(capsys, "export", str(path), "--db", str(db), "--format", "parquet", "--out", str(out))
    assert rc == 0, err
    df = pd.read_parquet(out)
    assert sorted(df["horizon"]) == ["3", "inf"] and sorted(df["rounds_played"]) == [3, 4]


def test_a_display_name_is_what_the_other_player_is_called(write_study, tmp_path):
    models = [scripted_player("a", "always-b"), scripted_player("b", "spiteful", display_name="Claude-3.7-Sonnet"), scripted_player("c", "spiteful")]
    seats = [{"focal": "a", "peer": "b"}, {"focal": "a", "peer": "c"}]
    path = write_study(envy_points("named", models, matchups="seats", seats=seats, grid={}, fixed={"matrix": "M1"}))
    db = tmp_path / "n.db"
    run_study(load_study(path), db, progress=False)
    store = Store(db)
    try:
        shown = {g["seats"]["peer"]: " ".join(m["content"] for t in store.turns("named", g["id"]) for m in t["messages"]) for g in store.games("named")}
    finally:
        store.dispose()
    assert "Claude-3.7-Sonnet" in shown["b"] and "spiteful" not in shown["b"]
    assert "Player B" in shown["c"] and "spiteful" not in shown["c"] and "Claude" not in shown["c"]
