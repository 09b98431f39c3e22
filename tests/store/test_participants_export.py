"""Issue 30: what participants answered reaches the export. `agora export --table participants`
(and the Python API) writes one row per person of a served study — pseudonym (their seat name in
the games and turns exports), external id and its source, stage and status, times, consent, quiz
tries, each attention check, each questionnaire answer as ``q_<name>``, bonus — and a study no
person took part in has no participants file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from agorabench.analysis.frames import export
from agorabench.analysis.participants import LEAD, participants_df
from agorabench.store.store import Store
from support.helpers import agora
from support.people import served_study

PEOPLE = 12


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return served_study(tmp_path_factory.mktemp("people"), people=PEOPLE, name="people_export")


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_participants_export_joins_the_games_and_carries_every_answer(study, tmp_path, capsys):
    path, db, crowd = study
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--table", "participants", "--out", str(tmp_path / "people.csv"))
    assert rc == 0 and f"wrote {PEOPLE} rows" in out, err
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "games.csv"))
    assert rc == 0, err
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--table", "turns", "--out", str(tmp_path / "turns.csv"))
    assert rc == 0, err
    people = _rows(tmp_path / "people.csv")
    games = {r["model_alice"]: r for r in _rows(tmp_path / "games.csv")}
    turns = _rows(tmp_path / "turns.csv")
    assert list(people[0])[: len(LEAD)] == list(LEAD)
    assert {"attention_after_1", "q_why", "q_fair", "bonus"} <= set(people[0])
    by_id = {r["participant_id"]: r for r in people}
    assert set(by_id) == {p.pid for p in crowd}
    for person in crowd:
        row = by_id[person.pid]
        # the seat name joins the games export (and the game id and role agree) and the turns export
        game = games[row["pseudonym"]]
        assert row["pseudonym"].startswith("human:") and game["game_id"] == row["game_id"] and row["role"] == "alice"
        assert any(t["model"] == row["pseudonym"] and t["game_id"] == row["game_id"] for t in turns)
        assert row["id_source"] == "prolific" and json.loads(row["entry_params"])["STUDY_ID"] == "study-1"
        assert row["consent"] == "yes" and row["quiz_tries"] == str(person.quiz_tries) and row["game_status"] == "done"
        assert row["attention_after_1"] in ("passed", "failed", "not reached")
        if row["attention_after_1"] != "not reached":
            assert row["attention_after_1"] == ("passed" if person.attention_answer == "Blue" else "failed")
        assert row["created"].endswith("+00:00")
        if person.finished:
            assert row["status"] == "finished" and row["stage"] == "done"
            assert row["q_why"] == person.answers["why"] and row["q_fair"] == str(person.answers["fair"])
            assert float(row["total_seconds"]) >= 0 and row["finished"] >= row["created"]
        else:
            assert row["status"] == "in progress" and row["stage"] == "questionnaire"
            assert row["q_why"] == row["q_fair"] == "" and row["finished"] == ""
    # both attention outcomes occurred (the scripted answers alternate), so the column is tested
    assert {"passed", "failed"} <= {r["attention_after_1"] for r in people}
    # no session secret leaves the database
    text = (tmp_path / "people.csv").read_text(encoding="utf-8")
    assert "csrf" not in text and "token" not in people[0] and all(p.token not in text for p in crowd)


def test_the_python_api_gives_the_same_table(study, tmp_path):
    _, db, crowd = study
    store = Store(str(db), read_only=True)
    try:
        df = participants_df(store, "people_export")
        assert export(store, "people_export", "participants", "parquet", str(tmp_path / "p.parquet")) == PEOPLE
    finally:
        store.dispose()
    assert len(df) == PEOPLE and df["pseudonym"].is_unique
    assert sorted(pd.read_parquet(tmp_path / "p.parquet")["participant_id"]) == sorted(p.pid for p in crowd)


def test_a_study_nobody_took_part_in_has_no_participants_file(tmp_path, write_study, capsys):
    path = write_study('name = "models_only"\ngame = "glee.bargaining"\nmatchups = "ordered_pairs"\n[fixed]\nmoney = 100\nhorizon = 2\n[[models]]\nname = "a"\nspec = "strategy/random"\n')
    db = tmp_path / "m.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert rc == 0, err
    out_file = tmp_path / "people.csv"
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--table", "participants", "--out", str(out_file))
    assert rc == 0, err
    assert "no participants" in out and "no participants file written" in out
    assert not out_file.exists()
