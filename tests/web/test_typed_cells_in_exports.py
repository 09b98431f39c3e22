"""What people type reaches exports without running in a spreadsheet (issue 42, item 5): a
participant's message, questionnaire answer and entry link parameters that start with ``=``,
``+``, ``-``, ``@``, a tab or a carriage return are written to CSV with a leading ``'`` (OWASP),
numbers stay numbers, Parquet keeps the raw text, and NUL never gets past the web form."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from support.helpers import agora
from support.web import AppServer, Participant, web_study

FORMULA = '=HYPERLINK("http://example.invalid","x")'


def _cells(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_formula_cells_are_neutralised_in_csv_and_raw_in_parquet(tmp_path, capsys):
    path = web_study(tmp_path, name="web_formulas", fixed={"money": 100, "horizon": 2, "messages": True}, web={"attention_checks": []})
    db = tmp_path / "w.db"
    with AppServer(path, db) as server:
        p = Participant(server.url, "F1")
        r = p.get("/start?PROLIFIC_PID=F1&STUDY_ID=%2Bstudy&SESSION_ID=%00%40sess%00")
        p.url = str(r.url.path)
        p.post("consent", agree="yes")
        p.post("instructions")
        p.post("quiz", q0="Yes")
        p.post("play", seq=p.seq(), alice_gain="60", bob_gain="40", message="-1+cmd|' /C calc'!A0\x00")
        p.post("play", seq=p.seq(), decision="reject")  # Bob's offer of round 2
        p.past_results()
        p.post("questionnaire", a_why=FORMULA + "\x00", a_fair="3")
    for table in ("participants", "turns"):
        rc, _, err = agora(capsys, "export", str(path), "--db", str(db), "--table", table, "--out", str(tmp_path / f"{table}.csv"))
        assert rc == 0, err
        rc, _, err = agora(capsys, "export", str(path), "--db", str(db), "--table", table, "--format", "parquet", "--out", str(tmp_path / f"{table}.parquet"))
        assert rc == 0, err
        assert b"\x00" not in (tmp_path / f"{table}.csv").read_bytes()
    person = _cells(tmp_path / "participants.csv")[0]
    assert person["q_why"] == "'" + FORMULA
    assert person["q_fair"] == "3"
    raw = pd.read_parquet(tmp_path / "participants.parquet").iloc[0]
    assert raw["q_why"] == FORMULA  # the raw value, NUL dropped at the form
    assert '"SESSION_ID": "@sess"' in person["entry_params"] and '"STUDY_ID": "+study"' in person["entry_params"]
    turns = [t for t in _cells(tmp_path / "turns.csv") if t["model"].startswith("human:")]
    assert turns[0]["action_message"] == "'-1+cmd|' /C calc'!A0"
    raw_turns = pd.read_parquet(tmp_path / "turns.parquet")
    assert raw_turns.loc[raw_turns["model"].str.startswith("human:"), "action_message"].iloc[0] == "-1+cmd|' /C calc'!A0"


def test_numbers_stay_numbers_and_only_text_cells_get_the_quote():
    from agorabench.analysis.frames import spreadsheet_safe

    df = pd.DataFrame(
        {
            "n": [-3, 4, 5, 6, 7, 8, 9],
            "x": [-1.5, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
            "t": ["-3", "=1+1", "+SUM(A1)", "@cmd", "\tx", "\rx", "plain"],
        }
    )
    safe = spreadsheet_safe(df)
    assert safe["n"].tolist() == [-3, 4, 5, 6, 7, 8, 9] and safe["x"].tolist() == df["x"].tolist()
    assert safe["t"].tolist() == ["-3", "'=1+1", "'+SUM(A1)", "'@cmd", "'\tx", "'\rx", "plain"]
    assert df["t"][1] == "=1+1"  # the frame itself is untouched (Parquet writes it)
