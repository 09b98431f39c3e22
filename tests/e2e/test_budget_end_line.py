"""Issue 42 (doubts on item 2): the end line of a run with a budget tells the truth. When the
budget was not reached it says what the study spent *of* the cap and that the cap was not
reached, with the dollars and tokens the database's turns hold; when it was reached it says so.
The real command line against the loopback server (tests/support/fake_openai.py) and SQLite."""

from __future__ import annotations

import re
import sqlite3

from support.helpers import agora
from support.studies import envy_points, model, paper_grid, scripted


def _study(url: str) -> str:
    remote = model("remote", "openai/fake", base_url=url, max_tokens=16, price_input=1.0, price_output=2.0)
    return envy_points("line", [remote, scripted("b", "always-b")], grid=paper_grid(margin=["marginal"], peer_move=["A", "D"]), seed=3)


def _spent(db) -> tuple[float, int]:
    with sqlite3.connect(db) as con:
        cost, tokens = con.execute("select coalesce(sum(cost), 0), coalesce(sum(prompt_tokens + completion_tokens), 0) from turns").fetchone()
    return cost, tokens


def test_a_budget_not_reached_says_spent_of_cap_and_not_reached(tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai()
    path, db = write_study(_study(url)), tmp_path / "line.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--budget", "1", "--budget-tokens", "1000000")
    assert rc == 0 and "24 played, 0 errors" in out, out + err
    cost, tokens = _spent(db)
    assert 0 < cost < 1 and 0 < tokens < 1_000_000
    line = next(x for x in out.splitlines() if x.startswith("budget "))
    assert line == f"budget $1.00 and 1,000,000 tokens: spent ${cost:.4f} and {tokens:,} tokens of $1.00 and 1,000,000 tokens (${cost:.4f} and {tokens:,} tokens in this run); not reached", line
    # nothing left to play, nothing spent by this run: the line says what the study has spent before
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--budget", "1")
    line = next(x for x in out.splitlines() if x.startswith("budget "))
    assert rc == 0 and line == f"budget $1.00: spent ${cost:.4f} of $1.00 ($0.0000 in this run); not reached", line


def test_a_budget_reached_is_not_said_to_be_not_reached(tmp_path, write_study, fake_openai, capsys):
    url, _ = fake_openai()
    path, db = write_study(_study(url)), tmp_path / "reached.db"
    rc, out, err = agora(capsys, "run", str(path), "--db", str(db), "--quiet", "--concurrency", "1", "--budget", "0.003")
    assert rc == 0, out + err
    cost, _ = _spent(db)
    line = next(x for x in out.splitlines() if x.startswith("budget "))
    assert line.startswith(f"budget reached: spent ${cost:.4f} of $0.003") and "not reached" not in line, line
    assert re.search(r"(\d+) game\(s\) left to play", line) and int(re.search(r"(\d+) game\(s\) left", line).group(1)) > 0
