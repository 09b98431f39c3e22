"""Issue 42, item 6: a template edited without a new ``VERSION`` is noticed. Each game is stored
with a digest of its prompt templates; a later run whose templates have the same VERSION but
other texts says so in one line (and plays those games again with ``replay_on_prompt_change``).
A prompt folder of one's own without a VERSION is not stored under the built-in version's name."""

from __future__ import annotations


from agorabench.core.game import Prompts
from support.helpers import agora
from support.studies import prompt_folder_study as _study, stored_prompt_versions as _versions

SYSTEM = "RULES {n}.\n\n{{{{ format_begins }}}}{{{{ format }}}}\n"


def test_an_edit_without_a_new_version_is_named_in_one_line(tmp_path, capsys):
    study, db = _study(tmp_path, "edited"), tmp_path / "e.db"
    (tmp_path / "p" / "VERSION").write_text("p-1\n")
    (tmp_path / "p" / "system.j2").write_text(SYSTEM.format(n=1))
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "6 played" in out and "prompt" not in err, err
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")  # nothing changed: nothing said
    assert rc == 0 and "6 already done" in out and "prompt" not in err, err

    (tmp_path / "p" / "system.j2").write_text(SYSTEM.format(n=2))  # VERSION left at p-1
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "6 games, 6 already done, 0 played" in out, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("agora: warning: 6 stored game(s) of study 'edited'"), err
    assert "6 with version 'p-1' but other template texts (edited without a new VERSION)" in lines[0], lines[0]

    study.write_text(study.read_text().replace('prompts = "p"', 'prompts = "p"\nreplay_on_prompt_change = true'))
    rc, out, err = agora(capsys, "plan", str(study), "--db", str(db))
    assert rc == 0 and "6" in out, err
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "6 games, 0 already done, 6 played" in out and "played again" in err, err
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "6 already done, 0 played" in out and "prompt" not in err, err


def test_a_folder_without_version_is_not_the_built_in_version(tmp_path, capsys):
    study, db = _study(tmp_path, "unversioned"), tmp_path / "u.db"
    (tmp_path / "p" / "system.j2").write_text(SYSTEM.format(n=1))
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and "6 played" in out, err
    from agorabench.families import load_game

    built_in = Prompts(load_game("envy.points").prompt_dir).version
    versions = _versions(db)
    assert built_in not in versions and len(versions) == 1, versions
    (version,) = versions
    assert version.startswith("custom-")
    # another edit of the same unversioned folder is another version, named as such
    (tmp_path / "p" / "system.j2").write_text(SYSTEM.format(n=2))
    rc, out, err = agora(capsys, "run", str(study), "--db", str(db), "--quiet")
    assert rc == 0 and f"6 with version {version!r}" in err, err


def test_the_digest_covers_every_template_the_folders_offer(tmp_path):
    from agorabench.families import load_game

    default = load_game("envy.points").prompt_dir
    plain = Prompts(default)
    assert plain.digest == Prompts(default).digest and len(plain.digest) == 64
    (tmp_path / "people").mkdir()
    (tmp_path / "people" / "system.j2").write_text("for people\n")
    (tmp_path / "VERSION").write_text("x-1\n")
    variant = Prompts(default, tmp_path)
    assert variant.version == "x-1" and variant.digest != plain.digest
    (tmp_path / "people" / "system.j2").write_text("for people, edited\n")
    assert Prompts(default, tmp_path).digest != variant.digest
