"""Bad input on the command line: one line `agora: error: ...`, exit status 2, no traceback.

The first test runs the real process (``python -m agorabench``): its exit status is the
interpreter's; the others call the command line in this process (``main``'s return value is
that status), which tests the same messages without a new interpreter each."""

from __future__ import annotations

from support.helpers import ROOT, agora, run_agora
from support.studies import BARGAIN_TINY


def one_line_error(rc: int, out: str, err: str, *words: str) -> None:
    """Exit status 2 and exactly one stderr line, ``agora: error: ...``, holding each of ``words``."""
    assert rc == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agora: error: "), err
    for w in words:
        assert w in lines[0], lines[0]


def test_model_override_that_leaves_a_seat_based_study_without_games(tmp_path):
    db = tmp_path / "m.db"
    proc = run_agora("run", str(ROOT / "studies" / "commons_multigov.toml"), "--model", "strategy/sustainable", "--model", "strategy/greedy", "--db", str(db))
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "no game to play", "--model")
    assert not db.exists()


def test_a_design_without_games_is_an_error(write_study, tmp_path, capsys):
    path = write_study('name = "few"\ngame = "commons"\nmatchups = "ordered_pairs"\n[[models]]\nname = "a"\nspec = "strategy/greedy"\n[[models]]\nname = "b"\nspec = "strategy/sustainable"\n')
    one_line_error(*agora(capsys, "run", str(path), "--db", str(tmp_path / "x.db")), "no game to play", "same_model")


def test_export_of_a_study_the_database_lacks(write_study, tmp_path, capsys):
    path = write_study(BARGAIN_TINY)
    db = tmp_path / "t.db"
    assert agora(capsys, "run", str(path), "--db", str(db), "--quiet")[0] == 0
    out = tmp_path / "other.csv"
    one_line_error(*agora(capsys, "export", "not_there", "--db", str(db), "--out", str(out)), "not_there", "tiny")
    assert not out.exists()
    one_line_error(*agora(capsys, "report", "not_there", "--db", str(db), "--out", str(tmp_path / "rep")), "not_there")


def test_out_paths_that_cannot_be_written(write_study, tmp_path, capsys):
    path = write_study(BARGAIN_TINY)
    db = tmp_path / "t.db"
    assert agora(capsys, "run", str(path), "--db", str(db), "--quiet")[0] == 0
    existing = tmp_path / "exists.txt"
    existing.write_text("keep me")
    one_line_error(*agora(capsys, "report", str(path), "--db", str(db), "--out", str(existing)), "is a file")
    assert existing.read_text() == "keep me"
    one_line_error(*agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path)), "is a folder")
    one_line_error(*agora(capsys, "export", str(path), "--db", str(db), "--out", str(tmp_path / "no" / "such.csv")), "does not exist")
    # an existing file is simply replaced by the export
    rc, _, _ = agora(capsys, "export", str(path), "--db", str(db), "--out", str(existing))
    assert rc == 0 and existing.read_text().startswith("game_id")
