"""An export or report that fails never destroys a good earlier file (issue 28, item 11): every
output file (export CSV / Parquet, a report's index.html and its SVG / CSV files, profile.html /
profile.csv, agora analyze's CSVs) is written to a temporary name beside it and renamed into place
once complete. A disk that fills up partway (simulated: the writer writes half its bytes, then
raises ENOSPC) leaves the earlier files byte for byte, no temporary file behind, and one line
naming the file and the cause."""

from __future__ import annotations

import builtins
import errno
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from agorabench.analysis import files
from agorabench.analysis.files import OutputError, staged, write_text
from support.helpers import agora, one_line_error
from support.studies import envy_points, paper_grid, scripted, study_toml

ENVY = envy_points("out_envy", [scripted("self-max"), scripted("random")], seed=3, grid=paper_grid(margin=["marginal"], peer_move=["A", "D"]))
BARGAINING = study_toml(
    "out_glee", "glee.bargaining", matchups="all_pairs", repeats=2, seed=1,
    grid={"horizon": [3, "inf"], "messages": [True, False]}, fixed={"infinite_rounds": 4},
    models=[scripted("spe"), scripted("random")],
)
FULL = os.strerror(errno.ENOSPC)  # "No space left on device"


def _full_disk(monkeypatch, after: int = 0, method: str = "to_csv") -> list[str]:
    """From the ``after``+1-th call on, ``DataFrame.<method>`` writes half of its output to the
    path it is given and then fails as a full disk does; returns the paths it was given."""
    real = getattr(pd.DataFrame, method)
    calls: list[str] = []

    def writer(self, path=None, *args, **kwargs):
        if path is None:
            return real(self, path, *args, **kwargs)
        calls.append(str(path))
        if len(calls) <= after:
            return real(self, path, *args, **kwargs)
        real(self, path, *args, **kwargs)
        data = Path(path).read_bytes()
        Path(path).write_bytes(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, FULL)

    monkeypatch.setattr(pd.DataFrame, method, writer)
    return calls


def _full_disk_on_open(monkeypatch, name: str) -> None:
    """Writing a file called ``name`` through analysis.files fails halfway with ENOSPC."""

    class Half:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, FULL)

    def fake_open(path, mode="r", *args, **kwargs):
        f = builtins.open(path, mode, *args, **kwargs)
        return Half(f) if "w" in mode and str(path).endswith(name) else f

    monkeypatch.setattr(files, "open", fake_open, raising=False)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _no_temporary_files(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if p.name.startswith(".tmp-")]
    assert not left, left


@pytest.fixture(scope="module")
def envy_db(tmp_path_factory):
    from agorabench.cli import main

    folder = tmp_path_factory.mktemp("envy")
    study = folder / "out_envy.toml"
    study.write_text(ENVY, encoding="utf-8")
    db = folder / "out_envy.db"
    assert main(["run", str(study), "--db", str(db), "--quiet"]) == 0
    return study, db


@pytest.fixture(scope="module")
def made(envy_db, tmp_path_factory):
    """``made("report")`` or ``made("profile")``: a folder with the envy study's report (``agora
    report``) or profile (``agora profile``) of that database, made on first use; a test copies it
    where it needs an earlier one (the same files, byte for byte, as making it there gives)."""
    from agorabench.cli import main

    study, db = envy_db
    done: dict[str, Path] = {}

    def _made(kind: str) -> Path:
        if kind not in done:
            out = tmp_path_factory.mktemp(kind) / kind
            args = ["report", str(study), "--db", str(db)] if kind == "report" else ["profile", str(db)]
            assert main([*args, "--out", str(out)]) == 0
            done[kind] = out
        return done[kind]

    return _made


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_failed_export_keeps_the_earlier_file_and_names_it(fmt, envy_db, tmp_path, capsys, monkeypatch):
    study, db = envy_db
    out = tmp_path / f"games.{fmt}"
    rc, _, err = agora(capsys, "export", str(study), "--db", str(db), "--format", fmt, "--out", str(out))
    assert rc == 0, err
    before = out.read_bytes()
    calls = _full_disk(monkeypatch, method="to_csv" if fmt == "csv" else "to_parquet")
    rc, _, err = agora(capsys, "export", str(study), "--db", str(db), "--format", fmt, "--out", str(out), "--table", "turns")
    line = one_line_error(rc, err, f"could not write {out}", FULL)
    assert line == f"agora: error: could not write {out}: {FULL}"
    assert calls and all(Path(c).parent == out.parent and Path(c).name != out.name for c in calls)  # written beside it, under another name
    assert out.read_bytes() == before  # the earlier export, byte for byte
    _no_temporary_files(tmp_path)


def test_an_export_without_an_earlier_file_leaves_nothing(envy_db, tmp_path, capsys, monkeypatch):
    study, db = envy_db
    out = tmp_path / "games.csv"
    _full_disk(monkeypatch)
    rc, _, err = agora(capsys, "export", str(study), "--db", str(db), "--out", str(out))
    one_line_error(rc, err, str(out), FULL)
    assert list(tmp_path.iterdir()) == []  # neither a cut file nor a temporary one


def test_a_report_that_fails_midway_keeps_every_file_of_the_earlier_report(envy_db, made, tmp_path, capsys, monkeypatch):
    study, db = envy_db
    out = tmp_path / "rep"
    shutil.copytree(made("report"), out)  # the earlier report
    before = _snapshot(out)
    assert "index.html" in before and any(n.endswith(".svg") for n in before) and any(n.endswith(".csv") for n in before)
    # the disk fills up at the report's fourth table: three tables and some figures are written by then
    calls = _full_disk(monkeypatch, after=3)
    rc, _, err = agora(capsys, "report", str(study), "--db", str(db), "--out", str(out))
    failed = out / Path(calls[3]).name.split("-", 2)[2]  # .tmp-XXXXXXXX-NAME -> NAME
    line = one_line_error(rc, err, FULL)
    assert line == f"agora: error: could not write {failed}: {FULL}"
    assert _snapshot(out) == before  # index.html, SVGs and CSVs: all the earlier report's
    _no_temporary_files(out)


def test_a_report_whose_page_cannot_be_written_keeps_the_earlier_page(envy_db, made, tmp_path, capsys, monkeypatch):
    study, db = envy_db
    out = tmp_path / "rep"
    shutil.copytree(made("report"), out)  # the earlier report
    before = _snapshot(out)
    assert "index.html" in before
    _full_disk_on_open(monkeypatch, "index.html")
    rc, _, err = agora(capsys, "report", str(study), "--db", str(db), "--out", str(out))
    line = one_line_error(rc, err, FULL)
    assert line == f"agora: error: could not write {out / 'index.html'}: {FULL}"
    assert _snapshot(out) == before
    _no_temporary_files(out)


def test_a_report_made_again_from_the_same_games_is_the_same_files(envy_db, made, tmp_path, capsys):
    """No clock or random id in a report but its provenance line's minute of making: made twice
    (first the module's report, then once more here, each into a folder of its own), every figure
    and table is the same file byte for byte and the page the same but for that minute (the
    figures' SVG metadata once carried the time and random element ids)."""
    study, db = envy_db
    reports = []
    for folder in (made("report"), tmp_path / "second"):
        if not folder.exists():
            assert agora(capsys, "report", str(study), "--db", str(db), "--out", str(folder))[0] == 0
        files = _snapshot(folder)
        page = files.pop("index.html")
        reports.append((files, re.subn(rb"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"Generated (minute) UTC", page)))
    assert any(n.endswith(".svg") for n in reports[0][0])
    assert reports[0][1][1] == 1  # the one line that says when
    assert reports[0] == reports[1]


@pytest.mark.parametrize("name", ["profile.csv", "profile.html"])
def test_a_failed_profile_keeps_the_earlier_profile(name, envy_db, made, tmp_path, capsys, monkeypatch):
    _, db = envy_db
    out = tmp_path / "prof"
    shutil.copytree(made("profile"), out)  # the earlier profile
    before = _snapshot(out)
    assert {"profile.csv", "profile.html"} <= set(before) and all(n.endswith(".svg") for n in set(before) - {"profile.csv", "profile.html"})
    if name == "profile.csv":
        _full_disk(monkeypatch)
    else:
        _full_disk_on_open(monkeypatch, name)
    rc, _, err = agora(capsys, "profile", str(db), "--out", str(out))
    line = one_line_error(rc, err, FULL)
    assert line == f"agora: error: could not write {out / name}: {FULL}"
    assert _snapshot(out) == before
    _no_temporary_files(out)


def test_a_failed_analysis_keeps_the_earlier_csv_files(tmp_path, capsys, monkeypatch):
    study = tmp_path / "out_glee.toml"
    study.write_text(BARGAINING, encoding="utf-8")
    db = tmp_path / "out_glee.db"
    assert agora(capsys, "run", str(study), "--db", str(db), "--quiet")[0] == 0
    out = tmp_path / "csv"
    rc, _, err = agora(capsys, "analyze", "glee", str(study), "--db", str(db), "--reps", "5", "--out", str(out))
    assert rc == 0, err
    before = _snapshot(out)
    assert "bargaining_table5.csv" in before
    calls = _full_disk(monkeypatch, after=2)
    rc, _, err = agora(capsys, "analyze", "glee", str(study), "--db", str(db), "--reps", "5", "--out", str(out))
    failed = out / Path(calls[2]).name.split("-", 2)[2]
    assert one_line_error(rc, err, FULL) == f"agora: error: could not write {failed}: {FULL}"
    assert _snapshot(out) == before
    _no_temporary_files(out)


def test_the_writer_itself(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old", encoding="utf-8")
    write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    # inside staged(), nothing replaces a file until the block ends whole
    with pytest.raises(RuntimeError):
        with staged():
            write_text(target, "newer")
            write_text(tmp_path / "b.txt", "b")
            assert target.read_text(encoding="utf-8") == "new" and not (tmp_path / "b.txt").exists()
            raise RuntimeError("a later step fails")
    assert target.read_text(encoding="utf-8") == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    with staged():
        write_text(target, "newest")
        write_text(tmp_path / "b.txt", "b")
    assert target.read_text(encoding="utf-8") == "newest" and (tmp_path / "b.txt").read_text(encoding="utf-8") == "b"
    # a folder that is not there: one line naming the file
    with pytest.raises(OutputError) as caught:
        write_text(tmp_path / "missing" / "x.html", "x")
    assert str(caught.value) == f"could not write {tmp_path / 'missing' / 'x.html'}: No such file or directory"
