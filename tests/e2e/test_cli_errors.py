"""Bad input on the command line: one line `agora: error: ...`, exit status 2, no traceback."""

from __future__ import annotations

from support.helpers import ROOT, run_agora
from support.studies import BARGAIN_TINY


def one_line_error(proc, *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agora: error: "), proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_model_override_that_leaves_a_seat_based_study_without_games(tmp_path):
    db = tmp_path / "m.db"
    proc = run_agora("run", str(ROOT / "studies" / "commons_multigov.toml"), "--model", "strategy/sustainable", "--model", "strategy/greedy", "--db", str(db))
    one_line_error(proc, "no game to play", "--model")
    assert not db.exists()


def test_a_design_without_games_is_an_error(write_study, tmp_path):
    path = write_study('name = "few"\ngame = "commons"\nmatchups = "ordered_pairs"\n[[models]]\nname = "a"\nspec = "strategy/greedy"\n[[models]]\nname = "b"\nspec = "strategy/sustainable"\n')
    one_line_error(run_agora("run", str(path), "--db", str(tmp_path / "x.db")), "no game to play", "same_model")


def test_export_of_a_study_the_database_lacks(write_study, tmp_path):
    path = write_study(BARGAIN_TINY)
    db = tmp_path / "t.db"
    assert run_agora("run", str(path), "--db", str(db), "--quiet").returncode == 0
    out = tmp_path / "other.csv"
    one_line_error(run_agora("export", "not_there", "--db", str(db), "--out", str(out)), "not_there", "tiny")
    assert not out.exists()
    one_line_error(run_agora("report", "not_there", "--db", str(db), "--out", str(tmp_path / "rep")), "not_there")


def test_out_paths_that_cannot_be_written(write_study, tmp_path):
    path = write_study(BARGAIN_TINY)
    db = tmp_path / "t.db"
    assert run_agora("run", str(path), "--db", str(db), "--quiet").returncode == 0
    existing = tmp_path / "exists.txt"
    existing.write_text("keep me")
    one_line_error(run_agora("report", str(path), "--db", str(db), "--out", str(existing)), "is a file")
    assert existing.read_text() == "keep me"
    one_line_error(run_agora("export", str(path), "--db", str(db), "--out", str(tmp_path)), "is a folder")
    one_line_error(run_agora("export", str(path), "--db", str(db), "--out", str(tmp_path / "no" / "such.csv")), "does not exist")
    # an existing file is simply replaced by the export
    proc = run_agora("export", str(path), "--db", str(db), "--out", str(existing))
    assert proc.returncode == 0 and existing.read_text().startswith("game_id")
