"""The real small model plays the classic battery once (every game at the parameters of its human
data, shortened), and the report and the profile set it beside people. The model chooses at
about chance, so this checks validity and plumbing: every decision recorded with its validity,
every game with human data compared, and the model's row in each comparison."""

from __future__ import annotations

import pandas as pd
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from agorabench.store.store import Store
from support.helpers import agora, ROOT
from support.studies import toml_text

pytestmark = pytest.mark.llm


def small_battery(tmp_path):
    """studies/battery.toml with the embedded model only, one repeat, every game one round (the
    beauty contest of two players; 13 decisions in all)."""
    data = tomllib.loads((ROOT / "studies" / "battery.toml").read_text(encoding="utf-8"))
    data["models"] = [m for m in data["models"] if m["spec"] == "local"]
    data["repeats"] = 1
    for part in data["parts"]:
        part.pop("grid", None)
        if part["game"] == "public_goods":
            part["fixed"].update(rounds=1)  # four players: the groups of the human data
        if part["game"] == "prisoners_dilemma":
            part["fixed"] = {"horizon": "one-shot"}
        if part["game"] == "beauty_contest":
            part["fixed"].update(players=2, rounds=1)
    path = tmp_path / "battery.toml"
    path.write_text(toml_text(data), encoding="utf-8")
    return path


def test_the_embedded_model_plays_the_battery_and_stands_beside_people(tmp_path, capsys):
    study, db = small_battery(tmp_path), tmp_path / "b.db"
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db))
    assert rc == 0, err
    store = Store(str(db), read_only=True)
    try:
        games = store.games()
        turns = store.turns()
    finally:
        store.dispose()
    assert sorted(g["game"] for g in games) == ["beauty_contest", "dictator", "prisoners_dilemma", "public_goods", "trust", "ultimatum"]
    assert all(g["status"] == "done" for g in games)
    assert turns and all(t["raw"] is not None and isinstance(t["valid"], bool) for t in turns)
    assert all(t["action"] is not None if t["valid"] else t["error"] for t in turns)  # an invalid turn says why
    rc, _, err = agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    for game in ("dictator", "ultimatum", "trust", "public_goods", "prisoners_dilemma", "beauty_contest"):
        assert f"People as the yardstick: {game}" in page
        table = pd.read_csv(tmp_path / "rep" / f"{game.replace('_', '-')}-against-people.csv")  # files are named by slug
        assert "human (reference)" in set(table["who"])
        # the model's row is there whenever one of its first decisions of the measure was valid
        assert set(table["who"]) <= {"human (reference)", "smollm2-135m"}
    rc, _, err = agora(capsys, "profile", str(db), "--out", str(tmp_path / "prof"))
    assert rc == 0, err
    rows = pd.read_csv(tmp_path / "prof" / "profile.csv")
    across = rows[(rows["family"] == "people as the yardstick") & (rows["measure"] == "across the battery")]
    assert set(across["model"]) >= {"human (reference)"}
