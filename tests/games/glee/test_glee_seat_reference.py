"""The reference model a GLEE analysis names is the one its coefficients are relative to (issue 41
item 12): where the chosen reference never sat in a seat (people as Alice against a model as Bob,
say), that seat's effects are relative to its most frequent model, and ``agora analyze glee``,
its fit table, Table 6 and the report say so instead of naming the reference alone. Counts of
people say what they count, so two counts in one report differ for a stated reason.

A scripted bargaining study (60 games, a second to play), real SQLite."""

from __future__ import annotations

import pandas as pd
from support.helpers import agora
from support.studies import scripted, study_toml

from agorabench.analysis.frames import people_line

SEATS = [("a", "r"), ("b", "r"), ("a", "b"), ("b", "a"), ("a", "a")]  # (Alice, Bob): r never sits as Alice


def gref(seats: list[tuple[str, str]]) -> str:
    """The study: reference model r, scripted r / a / b in the given seats, 3 repeats."""
    return study_toml(
        "gref",
        "glee.bargaining",
        matchups="seats",
        seats=[{"alice": alice, "bob": bob} for alice, bob in seats],
        repeats=3,
        seed=1,
        grid={"delta_a": [0.8, 0.9], "money": [100, 1000]},
        tables={"analysis": {"reference_model": "r"}},
        models=[scripted("r", "spe"), scripted("a", "always-accept"), scripted("b", "random")],
    )


STUDY = gref(SEATS)

NOTE = "As Alice, where r never played, the model effects are relative to a (the seat's most frequent model)"


def test_a_seat_the_reference_never_sat_in_is_named_with_its_own_reference(write_study, tmp_path, capsys):
    path, db = write_study(STUDY), str(tmp_path / "g.db")
    assert agora(capsys, "run", str(path), "--db", db, "--quiet")[0] == 0
    rc, out, err = agora(capsys, "analyze", "glee", str(path), "--db", db, "--out", str(tmp_path / "csv"))
    assert rc == 0, err
    assert "reference model r (the study file's [analysis] reference_model)" in out and NOTE in out
    assert "Table 6 (pp vs r; as Alice vs a)" in out
    fit = pd.read_csv(tmp_path / "csv" / "bargaining_fit.csv")
    assert set(fit["reference_model"]) == {"Alice: a; Bob: r"}
    t6 = pd.read_csv(tmp_path / "csv" / "bargaining_table6.csv")
    assert t6[t6["reference"]].set_index("role")["model"].to_dict() == {"Alice": "a", "Bob": "r"}  # what the text now says
    rc, _, err = agora(capsys, "report", str(path), "--db", db, "--out", str(tmp_path / "report"))
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert rc == 0 and NOTE.replace("'", "&#x27;") in page and "relative to <b>r</b> (as Alice, where r never played: <b>a</b>)" in page


def test_a_reference_in_both_seats_gets_no_seat_note(write_study, tmp_path, capsys):
    both = gref(SEATS[:-1] + [("r", "a")])
    path, db = write_study(both), str(tmp_path / "g.db")
    assert agora(capsys, "run", str(path), "--db", db, "--quiet")[0] == 0
    rc, out, err = agora(capsys, "analyze", "glee", str(path), "--db", db)
    assert rc == 0 and "where r never played" not in out and "Table 6 (pp vs r)" in out, err


def test_a_people_count_says_what_it_counts():
    games = pd.DataFrame(
        {
            "game": ["glee.bargaining"] * 4,
            "status": ["done", "done", "error", "done"],
            "model_alice": ["human", "human", "human", "bot"],
            "participant_alice": ["human:p1", "human:p2", "human:p3", None],
        }
    )
    assert people_line(games) == "human: 3 people, 3 games (2 people in the 2 finished games the analyses use)"
    done = games[games["status"] == "done"]
    assert people_line(done, of=" of Bargaining") == "human: 2 people, 2 games of Bargaining"
    assert people_line(done.drop(columns="status")) == "human: 2 people, 2 games"
    assert people_line(games[games["model_alice"] == "bot"]) == ""
