"""The instructions page tells a person what a turn out of time becomes, as the game plays it:
the default answer where the game has one, "not answered" where it asks with no fallback."""

from __future__ import annotations

from pathlib import Path

from support.web import AppServer, Participant, web_study

STUDIES = Path(__file__).parents[2] / "studies"


def _instructions(path: Path, db: Path) -> str:
    with AppServer(path, db) as server:
        p = Participant(server.url, "N1")
        p.enter()
        return p.post("consent", agree="yes").text


def test_subskills_says_a_question_out_of_time_is_not_answered(tmp_path):
    page = _instructions(STUDIES / "web_subskills.toml", tmp_path / "s.db")
    assert "seconds for each decision" in page and "counts as not answered" in page and "default answer" not in page


def test_bargaining_says_the_default_answer_is_played(tmp_path):
    page = _instructions(web_study(tmp_path, name="web_note", web={"time_limit": 30}), tmp_path / "b.db")
    assert "the game's default answer is used for you" in page and "not answered" not in page
