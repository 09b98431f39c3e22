"""Mistakes that used to pass quietly each get one clear line (issue 23, item 12): a key variable
the study names but the environment lacks, a server that has no such model or path (HTTP 404 on
every call stops that model at once, as a refused key does), a mistyped study path for report."""

from __future__ import annotations

import sqlite3

from support.helpers import agora, one_line_error, server_requests
from support.studies import envy_points, paper_grid, scripted


def _study(url: str, **remote) -> str:
    """A hosted model against always-B: 2 games with the model as the focal player."""
    grid = paper_grid(matrix=["M1", "M2"], peer_status=["leading"], margin=["marginal"], peer_move=["B"])
    return envy_points("quiet", [{"name": "remote", "spec": "openai/fake", "base_url": url, "max_attempts": 3, **remote}, scripted("b", "always-b")], grid=grid)


def test_an_unset_key_variable_named_by_the_study_is_an_error_before_the_run(write_study, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MY_LAB_KEY", raising=False)
    path = write_study(_study("http://127.0.0.1:9/v1", api_key_env="MY_LAB_KEY"))
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "q.db"), "--quiet")
    one_line_error(rc, err, "MY_LAB_KEY is not set")
    assert not (tmp_path / "q.db").exists()  # nothing was touched


def test_a_server_without_the_model_stops_that_model_at_once(write_study, tmp_path, capsys, fake_openai):
    url, stats = fake_openai("--not-found")
    path = write_study(_study(url))
    db = tmp_path / "q.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--no-probe", "--concurrency", "1")
    assert rc == 1 and "2 errors" in out
    assert server_requests(stats) == 1  # one call: a 404 is not retried, and the model's other game is not tried
    errors = [e for (e,) in sqlite3.connect(db).execute("select error from games where status = 'error'")]
    assert len(errors) == 2 and all("HTTP 404" in e and "base_url" in e for e in errors)


def test_report_on_a_mistyped_study_path_names_the_study_file(tmp_path, capsys):
    rc, _, err = agora(capsys, "report", str(tmp_path / "studeis" / "demo.toml"), "--out", str(tmp_path / "r"))
    one_line_error(rc, err, "study file not found")


def test_the_python_api_names_a_mistyped_study(tmp_path):
    """``games_df(store, "typo")`` says which studies the database holds, instead of an empty
    frame without columns that fails later; a study without finished games keeps the columns."""
    import pytest

    from agorabench.analysis.frames import games_df
    from agorabench.store.store import Store

    store = Store(tmp_path / "api.db")
    try:
        store.save_game(id="g1", study="real", game="x", config={}, seats={"a": "m"}, repeat=0, seed=1, prompt_version="1", status="error", outcome=None, metrics=None, error="boom", turn_records=[])
        with pytest.raises(ValueError, match=r"no games of study 'typo'.*it holds: real"):
            games_df(store, "typo")
        empty = games_df(store, "real")  # stored, but none done
        assert len(empty) == 0 and "game_id" in empty.columns and "status" in empty.columns
    finally:
        store.dispose()
