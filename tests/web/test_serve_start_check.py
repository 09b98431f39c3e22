"""Issue 41 item 8: ``agora serve`` checks a served study before anyone enters, as a rehearsal
does: a bonus rule that names a value no game of its role records (a misspelt name pays nobody)
and a scale question without labels of its own (it would read "strongly disagree / strongly
agree" whatever it asks) stop the command with one line naming each; every ready served study
passes and sets the code and address for people who do not consent (Prolific asks for one)."""

from __future__ import annotations

import pytest

from agorabench.core.study import load_study
from agorabench.web.rehearse_bonus import bonus_problems, scale_problems, start_problems
from agorabench.web.settings import web_settings
from support.helpers import ROOT, agora, one_line_error
from support.web import web_study

SERVED = sorted((ROOT / "studies").glob("web_*.toml"))


@pytest.mark.parametrize("path", SERVED, ids=[p.stem for p in SERVED])
def test_every_ready_served_study_passes_the_start_check_and_says_where_decliners_go(path):
    study = load_study(path)
    assert start_problems(study) == []
    s = web_settings(study)
    assert s.decline_code and s.decline_code != s.completion_code
    assert s.decline_url.startswith("https://") and "{code}" in s.decline_url


def test_serve_refuses_a_misspelt_bonus_name_and_an_unlabelled_scale(tmp_path, capsys):
    web = {
        "bonus": "0.01 * alice_gian",
        "questionnaire": [{"name": "sure", "question": "How sure are you?", "kind": "scale", "scale": 5}],
    }
    path = web_study(tmp_path, name="web_unready", web=web)
    rc, out, err = agora(capsys, "serve", str(path), "--db", str(tmp_path / "w.db"), "--port", "1")
    line = one_line_error(rc, err, "not ready to serve", "alice_gian", "'sure'", "scale_labels", "--rehearse")
    assert "alice_gain" in line  # what the game does record, to spot the misspelling
    assert not (tmp_path / "w.db").exists()  # nothing was served


def test_per_role_rules_are_checked_for_each_role_people_play(tmp_path):
    ok = load_study(web_study(tmp_path, name="web_roles_ok", web={"bonus": {"alice": "0.01 * my_gain", "bob": "0.01 * bob_gain"}}))
    assert bonus_problems(ok) == [] and scale_problems(ok) == []
    seats = [{"alice": "participant", "bob": "opponent"}, {"alice": "opponent", "bob": "participant"}]
    bad = load_study(web_study(tmp_path, name="web_roles_bad", seats=seats, web={"bonus": {"alice": "0.01 * alice_gain", "bob": "0.01 * bob_profit"}}))
    (problem,) = bonus_problems(bad)
    assert "for bob" in problem and "bob_profit" in problem
