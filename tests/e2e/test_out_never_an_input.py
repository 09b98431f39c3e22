"""``--out`` of export, report, profile and analyze never writes over the command's own inputs:
the database (symlinks followed, hard links too), its ``-wal`` / ``-shm``, a cache database,
the study file. One line ``agora: error: ...``, exit status 2, the file untouched."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from agorabench.cli import main
from support.studies import BARGAIN_TINY


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("outguard")
    study = folder / "tiny.toml"
    study.write_text(BARGAIN_TINY, encoding="utf-8")
    db = folder / "tiny.db"
    assert main(["run", str(study), "--db", str(db), "--quiet", "--no-probe"]) == 0
    return study, db


def _refused(capsys, argv: list[str], *words: str) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("agora: error: ") and "refused" in err[0], err
    for w in words:
        assert w in err[0], err


def test_export_onto_its_database_is_refused(played, capsys):
    study, db = played
    before = _digest(db)
    _refused(capsys, ["export", str(study), "--db", str(db), "--out", str(db)], "the database")
    assert _digest(db) == before
    assert main(["export", str(study), "--db", str(db), "--out", str(db.with_suffix(".csv"))]) == 0  # still exports elsewhere
    assert _digest(db) == before


def test_export_through_a_symlink_a_hard_link_or_a_relative_path(played, capsys, tmp_path, monkeypatch):
    study, db = played
    before = _digest(db)
    link = tmp_path / "games.csv"
    link.symlink_to(db)
    _refused(capsys, ["export", str(study), "--db", str(db), "--out", str(link)], "the database")
    hard = tmp_path / "hard.csv"
    os.link(db, hard)
    _refused(capsys, ["export", str(study), "--db", str(db), "--out", str(hard)])
    monkeypatch.chdir(db.parent)
    _refused(capsys, ["export", str(study), "--db", str(db), "--out", "./tiny.db"])
    assert _digest(db) == before and link.is_symlink()


def test_wal_shm_and_the_study_file_are_refused(played, capsys):
    study, db = played
    text = study.read_text()
    for name in (db.name + "-wal", db.name + "-shm"):
        _refused(capsys, ["export", str(study), "--db", str(db), "--out", str(db.with_name(name))], "database")
    _refused(capsys, ["export", str(study), "--db", str(db), "--out", str(study)], "the study file")
    assert study.read_text() == text


def test_another_sqlite_database_such_as_a_cache_is_not_replaced(played, capsys, tmp_path):
    study, db = played
    cache = tmp_path / "cache.db"
    import sqlite3

    with sqlite3.connect(cache) as conn:
        conn.execute("create table cache (k text)")
    before = _digest(cache)
    _refused(capsys, ["export", str(study), "--db", str(db), "--out", str(cache)], "SQLite")
    assert _digest(cache) == before


def test_report_and_profile_folders_that_are_the_database(played, capsys, tmp_path):
    study, db = played
    before = _digest(db)
    _refused(capsys, ["report", str(study), "--db", str(db), "--out", str(db)], "the database")
    _refused(capsys, ["profile", str(db), "--out", str(db)], "the database")
    # a folder in which the profile would write profile.csv over the database
    folder = tmp_path / "prof"
    folder.mkdir()
    (folder / "profile.csv").symlink_to(db)
    _refused(capsys, ["profile", str(db), "--out", str(folder)], "the database")
    assert _digest(db) == before
