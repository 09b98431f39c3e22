"""Issue 28, item 12: a SQLite file whose damage lies in an index page passes SQLite's quick check
(which reads every page but never compares an index with its table), and was used silently: a
run counted fewer games as done through the damaged index and played stored games again, a
report read what the index pointed at. `agora run`, `report` and `export` now run the full
integrity check first and refuse such a file in one line, writing nothing to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agorabench.store.store import Store, StoreError
from support.helpers import agora, one_line_error
from support.studies import envy_points, scripted

NAME = "indexed"


@pytest.fixture
def played(tmp_path, capsys):
    """A finished study of 120 scripted games, checkpointed into the main file: (study, db)."""
    study, db = tmp_path / "indexed.toml", tmp_path / "indexed.db"
    situation = {"peer_status": "leading", "margin": "marginal", "peer_move": "B"}
    study.write_text(envy_points(NAME, [scripted("always-b"), scripted("self-max")], repeats=20, grid={"matrix": ["M1", "M2", "M3"]}, fixed=situation))
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "120 played" in out, err
    with sqlite3.connect(db) as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
    return study, db


def _damage_index(db: Path, index: str = "ix_games_study") -> None:
    """Change one byte of an entry in a leaf page of ``index`` (found with the ``dbstat``
    table), as a bad sector or a torn write would: the page stays well-formed, but its entry
    (study, rowid) now points at the next row, so one game is found twice through the index
    and another not at all."""
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("pragma page_size").fetchone()[0]
    data = bytearray(db.read_bytes())
    at = _cell(data, _leaves(db, index)[0], page_size, NAME.encode(), slot=10) + len(NAME)
    assert data[at - len(NAME) - 1] == 1, "the rowid is not one byte"  # its serial type
    data[at] += 1
    db.write_bytes(bytes(data))
    with sqlite3.connect(db) as conn:  # the damage this test is about: invisible to the quick check
        assert conn.execute("pragma quick_check").fetchall() == [("ok",)]
        assert conn.execute("pragma integrity_check").fetchall() != [("ok",)]
        done = [i for i, in conn.execute("select id from games where study = ? and status = 'done'", (NAME,))]
        assert len(done) == 120 and len(set(done)) == 119  # reads through the index go wrong


def _leaves(db: Path, index: str) -> list[int]:
    """The leaf pages of an index (SQLite's ``dbstat`` table)."""
    with sqlite3.connect(db) as conn:
        try:
            return [p for p, in conn.execute("select pageno from dbstat where name = ? and pagetype = 'leaf'", (index,))]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table")


def _cell(data: bytearray, page: int, page_size: int, key: bytes, slot: int = 0) -> int:
    """Where ``key`` lies in cell number ``slot`` (-1: the last) of an index's leaf page: the
    cell pointer array names the live cells (a page's free space may hold stale copies)."""
    start = (page - 1) * page_size
    assert data[start] == 0x0A, "not an index leaf page"
    count = int.from_bytes(data[start + 3 : start + 5], "big")
    slot = slot % count
    cell = start + int.from_bytes(data[start + 8 + 2 * slot : start + 10 + 2 * slot], "big")
    at = data.find(key, cell, cell + 100)
    assert at > 0, "the key is not in the cell"
    return at


def test_run_report_and_export_refuse_a_damaged_index_in_one_line(played, tmp_path, capsys):
    study, db = played
    _damage_index(db)
    before = db.read_bytes()
    line = one_line_error(*agora(capsys, "run", str(study), "--db", str(db), "--quiet")[::2], "damaged", str(db), "index", ".recover")
    assert "already done" not in line
    assert db.read_bytes() == before  # nothing written to it, no game played again
    one_line_error(*agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "rep"))[::2], "damaged", "index", ".recover")
    assert not (tmp_path / "rep" / "index.html").exists()
    one_line_error(*agora(capsys, "export", str(study), "--db", str(db), "--out", str(tmp_path / "g.csv"))[::2], "damaged", ".recover")
    assert not (tmp_path / "g.csv").exists()
    assert db.read_bytes() == before


def test_the_primary_key_index_is_checked_too(played, capsys):
    """Damage in the index of the games' ids (the one `run` reads to skip stored games)."""
    study, db = played
    with sqlite3.connect(db) as conn:
        name = conn.execute("select name from sqlite_master where type = 'index' and tbl_name = 'games' and name like 'sqlite_autoindex%'").fetchone()[0]
        first = conn.execute("select id from games order by id desc limit 1").fetchone()[0]
        page_size = conn.execute("pragma page_size").fetchone()[0]
    data = bytearray(db.read_bytes())
    at = _cell(data, _leaves(db, name)[-1], page_size, first.encode(), slot=-1)
    data[at + len(first) - 1] = ord("z")  # the last id's last hex digit turned into a letter past every digit
    db.write_bytes(bytes(data))
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma quick_check").fetchall() == [("ok",)]
        assert conn.execute("select count(*) from games where id = ?", (first,)).fetchone()[0] == 0  # the game is "missing"
    one_line_error(*agora(capsys, "run", str(study), "--db", str(db), "--quiet")[::2], "damaged", ".recover")


def test_a_run_store_checks_in_full_and_a_plain_opening_stays_quick(played):
    """The full check is made where a run writes and a report reads; other openings (the web
    app, `agora check --forget`) keep the quick one."""
    _, db = played
    _damage_index(db)
    Store(db).dispose()  # the quick check passes
    for opening in (lambda: Store(db, check_integrity="full"), lambda: Store(db, read_only=True)):
        with pytest.raises(StoreError, match="database file is damaged: .*missing from index"):
            opening()
    store = Store(db)
    with pytest.raises(StoreError, match="damaged"):
        store.verify()  # what Runner.run calls before it writes (a Ray share opens the store plainly)
    store.dispose()
