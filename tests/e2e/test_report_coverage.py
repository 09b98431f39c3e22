"""Reports, exports, ``show`` and ``analyze`` cover every game a study was run with: models given
with ``--model``, participants' games of a served study, and (for a study file edited since)
only the current grid, with the count of games left out. A provider spec never reaches a prompt."""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from support.helpers import agora, one_line_error

from agorabench.store.store import Store
from support.studies import envy_points, paper_grid, scripted


def cover_study(name: str = "cover", matchups: str = "ordered_pairs") -> str:
    """A Fehr–Schmidt chooser and a random player on M1 and M2 (leading, marginal) for peer moves
    A and B: 4 configurations, 8 games in ordered pairs."""
    grid = paper_grid(matrix=["M1", "M2"], peer_status=["leading"], margin=["marginal"], peer_move=["A", "B"])
    return envy_points(name, [scripted("fs", "fehr-schmidt"), scripted("random")], matchups=matchups, grid=grid)


ENVY = cover_study()

BARGAIN = """
name = "bargain"
game = "glee.bargaining"
matchups = "all_pairs"
repeats = 3
[grid]
delta_a = [0.8, 0.9]
complete_info = [true, false]
[fixed]
delta_b = 0.9
money = 100
horizon = 4
[[models]]
name = "only-in-file"
spec = "strategy/always-accept"
"""


def _rows(path) -> list[dict[str, str]]:
    return list(csv.DictReader(open(path, encoding="utf-8")))


def test_games_played_with_model_options_are_reported_exported_shown_and_analysed(tmp_path, write_study, capsys):
    path, db = write_study(BARGAIN, "bargain.toml"), tmp_path / "b.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--model", "strategy/spe", "--model", "strategy/always-accept")
    assert rc == 0, out + err
    stored = sqlite3.connect(db).execute("select count(*) from games").fetchone()[0]
    assert stored == 4 * 4 * 3  # 4 configurations x 4 seatings (all pairs of 2) x 3 repeats
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "g.csv"))
    assert rc == 0 and f"wrote {stored} rows" in out and "left out" not in err, out + err
    rows = _rows(tmp_path / "g.csv")
    assert {(r["model_alice"], r["model_bob"]) for r in rows} == {(a, b) for a in ("strategy/spe", "strategy/always-accept") for b in ("strategy/spe", "strategy/always-accept")}
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--table", "turns", "--out", str(tmp_path / "t.csv"))
    assert rc == 0 and {r["game_id"] for r in _rows(tmp_path / "t.csv")} == {r["game_id"] for r in rows}
    rc, out, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0 and "left out" not in err, err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert f"{stored} games played" in page and "strategy/spe" in page
    rc, out, err = agora(capsys, "show", str(path), rows[0]["game_id"], "--db", str(db))
    assert rc == 0 and f"game {rows[0]['game_id']}" in out, err
    rc, out, err = agora(capsys, "show", str(path), "--db", str(db), "--model", "strategy/always-accept")
    assert rc == 0 and "game " in out, err
    rc, out, err = agora(capsys, "analyze", "glee", str(path), "--db", str(db), "--reps", "5")
    assert "no finished games" not in err and "outside" not in err, err
    assert rc == 0 and f"{stored} games" in out, out + err


def test_an_edited_study_leaves_out_the_old_grid_with_its_count_and_keeps_model_option_games(tmp_path, write_study, capsys):
    path, db = write_study(ENVY), tmp_path / "e.db"
    assert agora(capsys, "run", str(path), "--db", str(db), "--quiet")[0] == 0  # 4 configs x 2 pairs = 8
    assert agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--model", "strategy/self-max", "--model", "strategy/spiteful")[0] == 0  # 8 more
    # by study name (as the dashboard's report): every stored game, the earlier run's models too
    rc, out, err = agora(capsys, "report", "cover", "--db", str(db), "--out", str(tmp_path / "byname"))
    assert rc == 0, err
    page = (tmp_path / "byname" / "index.html").read_text(encoding="utf-8")
    assert "16 games played" in page and "strategy/spiteful" in page and ">fs<" in page
    path.write_text(path.read_text().replace('matrix = ["M1", "M2"]', 'matrix = ["M1"]'))
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "now.csv"))
    assert rc == 0 and "wrote 8 rows" in out and "left out 8 stored game(s)" in err, out + err
    rows = _rows(tmp_path / "now.csv")
    assert {r["matrix"] for r in rows} == {"M1"}
    assert {r["model_focal"] for r in rows} == {"fs", "random", "strategy/self-max", "strategy/spiteful"}
    rc, out, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0 and "left out 8" in err
    assert "8 stored game(s) not in the study file" in (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "all.csv"), "--all")
    assert rc == 0 and "wrote 16 rows" in out
    # a grid with none of the stored configurations: an error naming the count, no file
    path.write_text(path.read_text().replace('matrix = ["M1"]', 'matrix = ["M3"]'))
    one_line_error(*agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "none.csv"))[::2], "all 16 stored game(s)", "outside", "--all")
    assert not (tmp_path / "none.csv").exists()
    one_line_error(*agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "r2"))[::2], "all 16", "--all")


def test_empty_exports_and_reports_say_why_and_fail(tmp_path, write_study, capsys):
    path, db = write_study(ENVY), tmp_path / "e.db"
    assert agora(capsys, "run", str(path), "--db", str(db), "--quiet")[0] == 0
    one_line_error(*agora(capsys, "export", "nosuch", "--db", str(db), "--out", str(tmp_path / "x.csv"))[::2], "no games of study 'nosuch'", "it holds: cover")
    one_line_error(*agora(capsys, "report", "nosuch", "--db", str(db), "--out", str(tmp_path / "r"))[::2], "no games of study 'nosuch'")
    one_line_error(*agora(capsys, "analyze", "glee", "nosuch", "--db", str(db))[::2], "no games of study 'nosuch'")
    other = write_study(cover_study(name="other"), "other.toml")
    one_line_error(*agora(capsys, "export", str(other), "--db", str(db), "--out", str(tmp_path / "y.csv"))[::2], "no games of study 'other'")
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "y.csv").exists()


def test_an_old_database_without_recorded_runs_still_opens_read_only(tmp_path, write_study, capsys):
    path, db = write_study(ENVY), tmp_path / "old.db"
    assert agora(capsys, "run", str(path), "--db", str(db), "--quiet")[0] == 0
    con = sqlite3.connect(db)
    con.execute("drop table study_runs")
    con.commit()
    con.close()
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "o.csv"))
    assert rc == 0 and "wrote 8 rows" in out, err
    tables = {t for (t,) in sqlite3.connect(db).execute("select name from sqlite_master where type = 'table'")}
    assert "study_runs" not in tables  # read-only: nothing created


def test_one_model_option_for_a_design_of_distinct_pairs_is_an_error(tmp_path, write_study, capsys):
    path, db = write_study(ENVY), tmp_path / "one.db"
    one_line_error(*agora(capsys, "run", str(path), "--db", str(db), "--model", "strategy/self-max")[::2], "ordered pair", "--model", "same_model")
    assert not db.exists()
    rc, out, err = agora(capsys, "run", str(write_study(cover_study(matchups="same_model"), "same.toml")), "--db", str(db), "--quiet", "--model", "strategy/self-max")
    assert rc == 0 and "4 played" in out, out + err


def test_a_served_studys_participant_games_are_exported_and_reported(tmp_path, capsys):
    """Two participants play over HTTP, the dashboard starts the model-only game; then the study
    file (unchanged) covers all three games."""
    import re
    import time

    import httpx
    from support.web import TOKEN, AppServer, Participant, web_study

    models = [{"name": "opponent", "spec": "strategy/always-reject"}, {"name": "spe", "spec": "strategy/spe"}]
    path = web_study(tmp_path, name="served", seats=[{"alice": "participant", "bob": "opponent"}, {"alice": "spe", "bob": "opponent"}], models=models, web={"attention_checks": [], "quiz": []})
    db = tmp_path / "served.db"
    with AppServer(path, db) as server:
        for pid in ("P1", "P2"):
            p = Participant(server.url, pid)
            p.enter(), p.post("consent", agree="yes"), p.post("instructions")
            p.post("play", seq=p.seq(), alice_gain="60", bob_gain="40")
            p.post("play", seq=p.seq(), decision="accept")
            p.past_results()
        r = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"})
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.get("/dash").text).group(1)
        assert r.post("/dash/run", data={"csrf": csrf}).status_code == 200
        deadline = time.time() + 30
        while "last model-only run: 1 played" not in r.get("/dash").text:
            assert time.time() < deadline
            time.sleep(0.1)
    seats = [json.loads(s) for (s,) in sqlite3.connect(db).execute("select seats from games")]
    assert len(seats) == 3 and sum(s["alice"].startswith("human:") for s in seats) == 2
    rc, out, err = agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "g.csv"))
    assert rc == 0 and "wrote 3 rows" in out and "left out" not in err, out + err
    assert sum(r["model_alice"].startswith("human:") for r in _rows(tmp_path / "g.csv")) == 2
    rc, out, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0 and "left out" not in err, err
    assert "3 games played" in (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    # the served grid edited away: the participants' games are left out with the rest, and counted
    path.write_text(path.read_text().replace("money = 100", "money = 200"))
    one_line_error(*agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "none.csv"))[::2], "all 3 stored game(s)", "--all")


GAMES = [
    ("envy.points", "ordered_pairs", "[grid]\nmatrix = [\"M1\"]\npeer_status = [\"leading\"]\nmargin = [\"marginal\"]\npeer_move = [\"A\"]"),
    ("envy.workplace", "ordered_pairs", ""),
    ("glee.bargaining", "ordered_pairs", "[fixed]\nmoney = 100\nhorizon = 2\nmessages = true"),
    ("glee.negotiation", "ordered_pairs", "[fixed]\nmoney = 100\nhorizon = 2\nmessages = true"),
    ("glee.persuasion", "ordered_pairs", "[fixed]\nhorizon = 2"),
    ("commons", "same_model", "[fixed]\nmonths = 1"),
]


@pytest.fixture(scope="module")
def fake_url():
    """One fault-free fake OpenAI server (tests/support/fake_openai.py) for the module's games:
    each test plays its own study into its own database, so a server's state is never read."""
    from support.helpers import FAKE_OPENAI, serving

    with serving(FAKE_OPENAI) as url:
        yield url


@pytest.mark.parametrize("game,matchups,design", GAMES, ids=[g[0] for g in GAMES])
def test_no_stored_prompt_holds_a_model_spec(game, matchups, design, tmp_path, write_study, fake_url, capsys):
    url = fake_url
    path = write_study(f'name = "spec_{game}"\ngame = "{game}"\nmatchups = "{matchups}"\n{design}\n[[models]]\nname = "x"\nspec = "strategy/random"\n')
    db = tmp_path / "p.db"
    specs = ["openai/fake-a@" + url, "openai/fake-b@" + url] if matchups == "ordered_pairs" else ["openai/fake-a@" + url]
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", *[a for s in specs for a in ("--model", s)])
    assert rc == 0, out + err
    store = Store(db, read_only=True)
    try:
        turns = store.turns()
    finally:
        store.dispose()
    assert turns
    text = "\n".join(m["content"] for t in turns for m in t["messages"])
    for spec in ("openai/fake-a", "openai/fake-b", "fake-a", "fake-b", url, "127.0.0.1"):
        assert spec not in text, (game, spec)


def test_a_seating_is_recorded_once_per_distinct_value(make_db):
    store = Store(make_db("runs"))
    try:
        one = {"models": [{"name": "a", "spec": "strategy/random"}], "matchups": "same_model", "seats": []}
        two = {**one, "matchups": "all_pairs"}
        store.record_run("s", one)
        store.record_run("s", two)
        store.record_run("s", one)  # again: no new row
        store.record_run("t", one)
        assert store.recorded_runs("s") == [one, two]
        assert store.recorded_runs("t") == [one] and store.recorded_runs("u") == []
    finally:
        store.dispose()
