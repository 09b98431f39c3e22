"""Issue 42, item 11: a study of any name can be rehearsed in a temporary folder. ``pilot/v2``
once went into the temporary folder's prefix and failed (no folder ``agora-rehearse-pilot``)."""

from __future__ import annotations

import tempfile

import pytest

from support.helpers import agora
from support.web import BARGAIN, study_text


@pytest.mark.parametrize("name", ["pilot/v2", "../../up", "a" * 200, "..", "día 1: ¿sí?"])
def test_the_prefix_is_one_folder_name(name):
    from agorabench.web.rehearse import temp_prefix

    prefix = temp_prefix(name)
    assert "/" not in prefix and "\\" not in prefix and len(prefix) <= 60 and prefix.startswith("agora-rehearse-")
    assert ".." not in prefix.removeprefix("agora-rehearse-").strip("-")


def test_a_study_named_pilot_v2_rehearses_in_a_temporary_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the rehearsal's folder lands here
    path = tmp_path / "pilot.toml"
    path.write_text(study_text("pilot/v2", BARGAIN["game"], BARGAIN["seats"], {"money": 100, "horizon": 2}, BARGAIN["models"], {"attention_checks": []}))
    rc, out, err = agora(capsys, "serve", str(path), "--rehearse", "1", "--rehearse-idle", "3")
    assert rc == 0, out + err
    folders = list(tmp_path.glob("agora-rehearse-pilot_v2-*"))
    assert len(folders) == 1 and (folders[0] / "rehearsal.db").exists(), list(tmp_path.iterdir())
