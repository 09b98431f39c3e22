"""A study of two families reports both families' sections, and ``agora profile`` takes the
study as ``report`` does (``STUDY --db DB``, or the study file alone) (issue 44 item 6)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from support.helpers import agora

STUDY = """
name = "two_families"
matchups = "same_model"
repeats = 2
seed = 3

[[parts]]
game = "dictator"
fixed = { endowment = 100, rounds = 1 }

[[parts]]
game = "ultimatum"
fixed = { pie = 100, rounds = 1 }

[[models]]
name = "random"
spec = "strategy/random"
"""

OTHER = STUDY.replace('name = "two_families"', 'name = "other_study"').replace("seed = 3", "seed = 4").replace('name = "random"', 'name = "only-other"')


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> tuple[Path, Path]:
    """The study file and its database, with a second study in the same database."""
    from agorabench.cli import main

    folder = tmp_path_factory.mktemp("two_families")
    study, other, db = folder / "two_families.toml", folder / "other_study.toml", folder / "two.db"
    study.write_text(STUDY, encoding="utf-8")
    other.write_text(OTHER, encoding="utf-8")
    for path in (study, other):
        assert main(["run", str(path), "--db", str(db)]) == 0
    return study, db


def _titles(page: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", page)


def test_report_has_sections_of_both_families(played, tmp_path, capsys):
    study, db = played
    rc, out, err = agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "r"))
    assert rc == 0, err
    titles = _titles((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    assert any(t.startswith("dictator: ") for t in titles), titles
    assert any(t.startswith("ultimatum: ") for t in titles), titles


def _models(folder: Path) -> set[str]:
    with open(folder / "profile.csv", encoding="utf-8") as f:
        return {row["model"] for row in csv.DictReader(f) if row.get("kind") == "model"}


def test_profile_takes_study_and_db_like_report(played, tmp_path, capsys):
    study, db = played
    rc, out, err = agora(capsys, "profile", str(study), "--db", str(db), "--out", str(tmp_path / "p"))
    assert rc == 0, err
    assert _models(tmp_path / "p") == {"random"}  # the other study's model is not read
    rc, out, err = agora(capsys, "profile", "two_families", "--db", str(db), "--out", str(tmp_path / "q"))
    assert rc == 0, err
    assert _models(tmp_path / "q") == {"random"}
    rc, out, err = agora(capsys, "profile", str(db), "--out", str(tmp_path / "all"))  # a database, read whole
    assert rc == 0, err
    assert _models(tmp_path / "all") == {"random", "only-other"}


def test_profile_of_a_study_the_database_lacks_says_so(played, tmp_path, capsys):
    _, db = played
    rc, out, err = agora(capsys, "profile", "no_such_study", "--db", str(db), "--out", str(tmp_path / "p"))
    assert rc != 0 and "no games of study 'no_such_study'" in err and "two_families" in err
    assert len(err.strip().splitlines()) == 1
