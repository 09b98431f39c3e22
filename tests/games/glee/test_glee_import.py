"""Import of the original GLEE game folders: every fixture game replays through our rules, and
the metrics of a few games are checked against values computed by hand from their logs."""

from __future__ import annotations

import csv

import pytest

from agorabench.analysis.frames import games_df
from agorabench.games.glee.importer import import_logs
from agorabench.store.store import Store
from support.helpers import agora


@pytest.fixture(scope="module")
def imported(shared_fixtures, tmp_path_factory):
    db = tmp_path_factory.mktemp("glee") / "glee.db"
    store = Store(db)
    count, problems = store.save_records(import_logs(shared_fixtures / "glee" / "human_vs_llm", "glee_humans"))
    yield store, count, problems, db
    store.dispose()


def _game(store: Store, family: str, ident: str) -> dict:
    (row,) = [g for g in store.games("glee_humans") if g["id"] == f"glee-{family}-{ident}"]
    return row


def test_every_fixture_game_is_imported(imported, shared_fixtures):
    store, count, problems, _ = imported
    folders = list((shared_fixtures / "glee" / "human_vs_llm").rglob("config.json"))
    assert count == len(folders) == 75
    games = store.games("glee_humans")
    assert {g["game"] for g in games} == {"glee.bargaining", "glee.negotiation", "glee.persuasion"}
    assert all(g["source"] == "import:glee" and g["status"] == "done" for g in games)
    # every logged move became a stored turn
    for g in games:
        rows = list(csv.DictReader((shared_fixtures / "glee" / "human_vs_llm").glob(f"{g['game'].split('.')[1]}/*/*/*/{g['id'].split('-')[-1]}/game.csv").__next__().open(newline="", encoding="utf-8")))
        moves = [r for r in rows if r["player"] != "Nature"]
        assert g["n_turns"] == len(moves)


def test_rule_violations_are_reported_and_marked_invalid(imported):
    store, _, problems, _ = imported
    # the only moves our rules reject: three human sellers who sent empty text messages
    flagged = sorted({p.split(":")[0] for p in problems})
    assert flagged == ["persuasion/1/8/3/1830684632BF1ED1", "persuasion/3/C/A/3CAC3DB9ECCF4616", "persuasion/4/1/F/41F4AE14757200FD"]
    assert all("20 logged move(s) break our rules" in p for p in problems)
    game = _game(store, "persuasion", "3CAC3DB9ECCF4616")
    assert game["n_invalid"] == 20 and len(game["outcome"]["rule_violations"]) == 20
    clean = [g for g in store.games("glee_humans") if g["game"] != "glee.persuasion"]
    assert all(g["n_invalid"] == 0 for g in clean)


def test_bargaining_metrics_by_hand(imported):
    store, *_ = imported
    # δA = δB = 1, M = 10,000; Alice accepts Bob's 6,000/4,000 in round 4
    g = _game(store, "bargaining", "0003852CF8408F00")
    assert g["outcome"]["agreed_round"] == 4 and g["outcome"]["alice_share"] == pytest.approx(0.6)
    assert g["metrics"] == pytest.approx({"efficiency": 1.0, "fairness": 0.96, "self_gain_alice": 0.6, "self_gain_bob": 0.4})
    assert g["config"]["horizon"] == "inf" and g["seats"] == {"alice": "human", "bob": "gemini-1.5-flash"}
    # δA = 0.95, δB = 0.8: accepted in round 2 at 6,000/4,000 -> 0.95·0.6 + 0.8·0.4
    g = _game(store, "bargaining", "048AA58A04C483E9")
    assert g["metrics"] == pytest.approx({"efficiency": 0.89, "fairness": 0.96, "self_gain_alice": 0.57, "self_gain_bob": 0.32})
    # old config format (deltas in game_args): δA = 1, δB = 0.8, horizon 12
    g = _game(store, "bargaining", "0043BAB60C08E66A")
    assert (g["config"]["delta_a"], g["config"]["delta_b"], g["config"]["horizon"]) == (1.0, 0.8, 12)


def test_negotiation_metrics_by_hand(imported, shared_fixtures):
    store, *_ = imported
    # V_A = 10,000, V_B = 12,000; Alice sells at Bob's 8,000 in round 2: below her value
    g = _game(store, "negotiation", "074B169DA9A84299")
    assert g["outcome"]["price"] == 8000 and g["outcome"]["agreed_round"] == 2
    assert g["metrics"] == pytest.approx({"efficiency": 0.0, "fairness": 1 - 4 * 0.3**2, "self_gain_alice": -0.2, "self_gain_bob": 0.4})
    # a seller who walks away to the outside option: no sale
    quits = [g for g in store.games("glee_humans") if g["game"] == "glee.negotiation" and g["outcome"]["ended_by"] != "sale"]
    assert {g["outcome"]["ended_by"] for g in quits} == {"alice_quit", "bob_quit"} and len(quits) == 4
    for g in quits:
        va, vb = g["config"]["f_a"], g["config"]["f_b"]
        assert g["metrics"]["efficiency"] == (1.0 if va >= vb else 0.0) and g["metrics"]["fairness"] == 1.0


def test_persuasion_metrics_by_hand(imported):
    store, *_ = imported
    # p = 1/3, v = 4: ten high and ten low rounds, the buyer never buys
    g = _game(store, "persuasion", "04493D97770E8923")
    out = g["outcome"]
    assert (out["high_rounds"], out["high_sold"], out["low_unsold"]) == (10, 0, 10)
    assert g["metrics"] == pytest.approx({"efficiency": 0.0, "fairness": 1.0, "self_gain_alice": 0.0, "self_gain_bob": 0.0})
    # qualities are those of the log, not of a random draw
    for g in store.games("glee_humans"):
        if g["game"] == "glee.persuasion":
            assert g["outcome"]["rounds_played"] == 20


def test_export_columns(imported):
    store, *_ = imported
    df = games_df(store, "glee_humans")
    for col in ["efficiency", "fairness", "self_gain_alice", "self_gain_bob", "agreed_round", "alice_share", "price", "high_rounds", "high_sold", "low_unsold", "delta_a", "delta_b", "money", "horizon", "complete_info", "messages", "f_a", "f_b", "p", "v", "myopic"]:
        assert col in df.columns, col


def test_mismatched_log_is_reported_not_stored(tmp_path, shared_fixtures):
    src = next((shared_fixtures / "glee" / "human_vs_llm" / "bargaining").rglob("0003852CF8408F00"))
    bad = tmp_path / "in" / "bad"
    bad.mkdir(parents=True)
    (bad / "config.json").write_text((src / "config.json").read_text())
    rows = (src / "game.csv").read_text().splitlines()
    (bad / "game.csv").write_text("\n".join(rows[:1] + rows[3:]))  # drop round 1: Bob now speaks first
    store = Store(tmp_path / "x.db")
    count, problems = store.save_records(import_logs(tmp_path / "in", "bad"))
    assert count == 0 and len(problems) == 1 and "the rules ask alice for a 'offer' move but the log has a 'offer' move by bob" in problems[0]


def test_cli_import(tmp_path, shared_fixtures, capsys):
    """``agora import glee`` (the command line, called in this process)."""
    folder = next((shared_fixtures / "glee" / "human_vs_llm" / "negotiation").rglob("074B169DA9A84299")).parent
    rc, out, err = agora(capsys, "import", "glee", str(folder), "--db", str(tmp_path / "g.db"), "--study", "one")
    assert rc == 0, err
    assert "imported 1 games into study one" in out


def test_report_on_imported_games(imported, tmp_path, capsys):
    _, _, _, db = imported
    rc, _, err = agora(capsys, "report", "glee_humans", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rc == 0, err
    page = (tmp_path / "rep" / "index.html").read_text()
    for family in ("Bargaining", "Negotiation", "Persuasion"):
        assert f"{family}: model pairs" in page
    assert "gemini-1.5-flash" in page and "human" in page
