"""Issue 28, item 10: stored games outlive the prompts that made them. A game's id covers the name
of the study's prompt folder, not its templates: after a template was edited and its VERSION
bumped, `agora run` said "6 already done" and nothing else, and the report named no prompt
version. Now the run says in one line how many stored games were played with other templates
(and plays them again where the study file says so), reports name the prompt versions of their
games, and the prompt folder is found beside the study file's real path (a symlinked study file
read the templates beside the link)."""

from __future__ import annotations

import json
import sqlite3

from agorabench.store.codec import unpack_messages
from support.helpers import agora
from support.studies import prompt_folder_study as _study, stored_prompt_versions as _versions




def _text(stored: str) -> str:
    """Every message of a stored transcript (packed or plain JSON) as one text."""
    return "\n".join(m["content"] for m in unpack_messages(json.loads(stored)))


def _provenance(html: str) -> str:
    return next(line for line in html.splitlines() if "id='provenance'" in line)


def test_a_run_names_games_played_with_other_templates_and_replays_them_when_asked(tmp_path, capsys):
    study, db = _study(tmp_path), tmp_path / "v.db"
    (tmp_path / "p" / "VERSION").write_text("p-1\n")
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "6 games, 0 already done, 6 played" in out, err
    assert "prompt" not in err

    # a template edited and its VERSION bumped: the stored games are kept, and the run says so in one line
    (tmp_path / "p" / "system.j2").write_text("EDITED RULES.\n\n{{ format_begins }}{{ format }}\n")
    (tmp_path / "p" / "VERSION").write_text("p-2\n")
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "6 games, 6 already done, 0 played" in out, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("agora: warning: 6 stored game(s) of study 'versions'"), err
    for words in ("envy.points", "6 with version 'p-1'", "now 'p-2'", "kept", "replay_on_prompt_change = true"):
        assert words in lines[0], (words, lines[0])
    assert _versions(db) == {"p-1": 6}
    rc, _, err = agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "r1"))
    assert rc == 0, err
    assert "prompt versions envy.points p-1 (6 games)" in _provenance((tmp_path / "r1" / "index.html").read_text())

    # the study file asks for them to be played again
    study.write_text(study.read_text().replace('prompts = "p"', 'prompts = "p"\nreplay_on_prompt_change = true'))
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "6 games, 0 already done, 6 played" in out, err
    assert "6 stored game(s)" in err and "played again" in err
    assert _versions(db) == {"p-2": 6}
    with sqlite3.connect(db) as conn:  # played with the edited templates
        assert sum("EDITED RULES" in _text(m) for (m,) in conn.execute("select messages from transcripts")) >= 6
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")  # nothing left to replay
    assert rc == 0 and "6 already done, 0 played" in out and "prompt" not in err, err
    rc, _, err = agora(capsys, "report", str(study), "--db", str(db), "--out", str(tmp_path / "r2"))
    assert rc == 0, err
    assert "prompt versions envy.points p-2 (6 games)" in _provenance((tmp_path / "r2" / "index.html").read_text())


def test_the_prompt_folder_lies_beside_the_study_files_real_path(tmp_path, capsys):
    real, linked = tmp_path / "real", tmp_path / "elsewhere"
    study = _study(real)
    (real / "p" / "VERSION").write_text("real-1\n")
    (linked / "p").mkdir(parents=True)
    (linked / "p" / "VERSION").write_text("other-1\n")
    (linked / "p" / "system.j2").write_text("OTHER TEMPLATES.\n\n{{ format_begins }}{{ format }}\n")
    link = linked / "study.toml"
    link.symlink_to(study)
    db = tmp_path / "l.db"
    rc, out, err = agora(capsys, "run", str(link), "--db", str(db), "--quiet")
    assert rc == 0 and "6 played" in out, err
    assert _versions(db) == {"real-1": 6}
    with sqlite3.connect(db) as conn:
        assert not any("OTHER TEMPLATES" in _text(m) for (m,) in conn.execute("select messages from transcripts"))
