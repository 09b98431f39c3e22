"""The command line end to end on scripted players: study expansion, run, resume, export, report,
and one-line errors for bad input. The commands run in this process (``agora``: ``main`` with
the arguments, its return value the exit status); the real process's exit status is tested in
tests/e2e/test_cli_errors.py."""

import sqlite3

import pandas as pd
import pytest

from agorabench.core.study import load_study
from support.helpers import ROOT, agora
from support.studies import envy_points, scripted

#: the paper's grid for always-B, the self-maximiser and a Fehr–Schmidt chooser
PLAYERS = [scripted("always-b"), scripted("self-max"), scripted("fs", "fehr-schmidt", params={"alpha": 0.8, "beta": 0.6})]
SCRIPTED = envy_points("scripted", PLAYERS)


def test_paper_design_expands_to_16_conversations_per_pair_per_matrix():
    study = load_study(ROOT / "studies" / "envy_points.toml")
    specs = study.expand()
    n_models = len(study.models)
    assert len(specs) == n_models * (n_models - 1) * 3 * 16
    assert len({s.id for s in specs}) == len(specs)
    pairs = {(s.seats["focal"], s.seats["peer"]) for s in specs}
    assert all(f != p for f, p in pairs) and len(pairs) == n_models * (n_models - 1)
    # ids are stable across loads
    assert [s.id for s in load_study(ROOT / "studies" / "envy_points.toml").expand()] == [s.id for s in specs]


def test_eight_models_give_the_papers_896_conversations_per_matrix(write_study):
    path = write_study(envy_points("scripted", [scripted(f"m{i}", "random") for i in range(8)]))
    specs = load_study(path).expand()
    assert sum(1 for s in specs if s.config["matrix"] == "M1") == 896


def test_run_export_report_and_resume(tmp_path, write_study, capsys):
    path = write_study(SCRIPTED)
    db = tmp_path / "s.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--concurrency", "4", "--quiet")
    assert rc == 0, err
    assert "288 played" in out and "0 errors" in out
    _, again, _ = agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    assert "288 already done, 0 played" in again

    out = tmp_path / "games.csv"
    assert agora(capsys, "export", str(path), "--db", str(db), "--table", "games", "--format", "csv", "--out", str(out))[0] == 0
    games = pd.read_csv(out)
    assert len(games) == 288
    for col in ("model_focal", "model_peer", "matrix", "peer_status", "margin", "peer_move", "t1", "t2", "t2_raw_ratio", "t3"):
        assert col in games.columns
    assert set(games["matrix"]) == {"M1", "M2", "M3"}
    b_m1 = games[(games.model_focal == "always-b") & (games.matrix == "M1")]
    assert (b_m1.t1 == 0.125).all() and (b_m1.t2 == 1.0).all() and (abs(b_m1.t3 - 5 / 12) < 1e-12).all()
    assert (games[games.model_focal == "self-max"].t1 == 0).all()

    pq = tmp_path / "turns.parquet"
    assert agora(capsys, "export", str(path), "--db", str(db), "--table", "turns", "--format", "parquet", "--out", str(pq))[0] == 0
    turns = pd.read_parquet(pq)
    assert len(turns) == 288 * 3 and turns["valid"].all()
    assert set(turns["phase"]) == {"choose", "status", "peer_move"}

    rc, _, err = agora(capsys, "report", str(path), "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    html = (tmp_path / "rep" / "index.html").read_text()
    for title in ("T1 self-first on M1", "T2 gap focus (reported numbers: gap / largest gap) on M2", "T2 gap focus (paper text: Δ/Δmax) on M2", "T3 peer-reduce on M3", "Mean envy terms per focal model (95% CI)", "Choices per turn: fs", "Played and invalid rates"):
        assert title in html
    assert html.count("<img") >= 12 + 1 + 3
    # T2: the reading that reproduces the paper's numbers comes first, the text's reading beside it
    assert html.index("T2 gap focus (reported numbers") < html.index("T2 gap focus (paper text")


def test_adding_a_model_only_runs_new_cells(tmp_path, write_study, capsys):
    path = write_study(SCRIPTED)
    db = tmp_path / "s.db"
    agora(capsys, "run", str(path), "--db", str(db), "--quiet")
    bigger = write_study(envy_points("scripted", [*PLAYERS, scripted("spite", "spiteful")]), name="bigger.toml")
    _, out, _ = agora(capsys, "run", str(bigger), "--db", str(db), "--quiet")
    # 4 models -> 12 ordered pairs x 48; 6 pairs were done
    assert "576 games, 288 already done, 288 played" in out


@pytest.mark.parametrize(
    "text,message",
    [
        ("name = 'x'\ngame = 'envy.points'\n[[models]\n", "not valid TOML"),
        ("name = 'x'\ngame = 'no.such.game'\n[[models]]\nname='a'\nspec='strategy/always-b'\n", "unknown game 'no.such.game'"),
        ("name = 'x'\ngame = 'envy.points'\n[[models]]\nname='a'\nspec='strategy/nope'\n", "has no strategy 'nope'"),
        ("name = 'x'\ngame = 'envy.points'\n[[models]]\nname='a'\nspec='mystery-model'\n", "unknown model spec 'mystery-model'"),
        ("name = 'x'\ngame = 'envy.points'\n[grid]\nmatrix = ['M9']\n[[models]]\nname='a'\nspec='strategy/always-b'\n", "invalid configuration"),
        ("name = 'x'\ngame = 'envy.points'\nrepeats = 0\n[[models]]\nname='a'\nspec='strategy/always-b'\n", "repeats"),
        ("game = 'envy.points'\n[[models]]\nname='a'\nspec='strategy/always-b'\n", "name: Field required"),
        ("name = 'x'\ngame = 'envy.points'\nmatchups = 'everyone'\n[[models]]\nname='a'\nspec='strategy/always-b'\n", "unknown matchups"),
        ("name = 'x'\ngame = 'envy.points'\n[[models]]\nname='a'\nspec='strategy/fehr-schmidt'\nparams = { gamma = 1 }\n", "bad parameters"),
    ],
)
def test_bad_study_files_give_one_line_errors(tmp_path, write_study, capsys, text, message):
    path = write_study(text)
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "x.db"), "--quiet")  # in this process: a subprocess adds only its start-up
    assert rc == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agora: error:") and message in lines[0], err


def test_missing_api_key_is_a_one_line_error(tmp_path, write_study, capsys, monkeypatch):
    monkeypatch.delenv("AGORA_TEST_NO_SUCH_KEY", raising=False)
    path = write_study("name = 'x'\ngame = 'envy.points'\n[[models]]\nname='gpt'\nspec='openai/gpt-4o-mini'\napi_key_env='AGORA_TEST_NO_SUCH_KEY'\n")
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "k.db"), "--quiet")
    assert rc == 2 and "Traceback" not in err
    assert "AGORA_TEST_NO_SUCH_KEY" in err and len(err.strip().splitlines()) == 1


def test_missing_files_give_one_line_errors(tmp_path, capsys):
    rc, _, err = agora(capsys, "run", str(tmp_path / "absent.toml"))
    assert rc == 2 and "study file not found" in err and "Traceback" not in err
    rc, _, err = agora(capsys, "report", str(ROOT / "studies" / "demo.toml"), "--db", str(tmp_path / "none.db"), "--out", str(tmp_path))
    assert rc == 2 and "database not found" in err


def test_model_option_replaces_the_study_models(tmp_path, write_study, capsys):
    path = write_study(SCRIPTED)
    db = tmp_path / "m.db"
    rc, _, err = agora(capsys, "run", str(path), "--db", str(db), "--model", "strategy/spiteful", "--model", "strategy/self-max", "--quiet")
    assert rc == 0, err
    con = sqlite3.connect(db)
    seats = {row[0] for row in con.execute("select seats from games")}
    assert seats == {'{"focal": "strategy/spiteful", "peer": "strategy/self-max"}', '{"focal": "strategy/self-max", "peer": "strategy/spiteful"}'}
