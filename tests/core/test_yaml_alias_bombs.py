"""Issue 42, item 14: a YAML alias bomb (nine lists of nine, nested nine deep: 387 million
values from a file of 900 bytes) under a model's ``params`` or in ``fixed`` once kept
``agora run`` busy for a minute and more with no output; it is refused in one line at once, as
is a value that contains itself. Aliases that expand a little are still read."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.helpers import agora, run_agora

HEAD = """name: bomb
game: envy.points
matchups: same_model
grid:
  matrix: [M1]
fixed:
  peer_status: leading
  margin: marginal
  peer_move: B
"""


def _bomb(indent: str) -> str:
    lines = [f"{indent}l0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{indent}l{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


def _run(capsys, tmp_path: Path, text: str) -> tuple[int, str, float]:
    path = tmp_path / "study.yaml"
    path.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    rc, _, err = agora(capsys, "run", str(path), "--db", str(tmp_path / "b.db"), "--quiet")
    return rc, err, time.perf_counter() - started


@pytest.mark.parametrize("where", ["params", "fixed"])
def test_an_alias_bomb_is_refused_at_once(tmp_path, where):
    if where == "params":
        text = HEAD + "models:\n  - name: s\n    spec: strategy/self-max\n    params:\n" + _bomb("      ")
    else:
        text = HEAD + _bomb("  ") + "models:\n  - name: s\n    spec: strategy/self-max\n"
    path = tmp_path / "study.yaml"
    path.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    proc = run_agora("run", str(path), "--db", str(tmp_path / "b.db"), "--quiet", timeout=30)  # the real command; it once ran for minutes
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "YAML aliases expand the study to" in lines[0] and "alias bomb" in lines[0], proc.stderr
    assert time.perf_counter() - started < 15
    assert not (tmp_path / "b.db").exists()


def test_a_value_that_contains_itself_is_refused(capsys, tmp_path):
    rc, err, _ = _run(capsys, tmp_path, HEAD.replace("fixed:\n", "fixed: &f\n  again: *f\n") + "models:\n  - name: s\n    spec: strategy/self-max\n")
    assert rc == 2 and "contains itself" in err, err


def test_a_few_aliases_are_still_read(capsys, tmp_path):
    shared = HEAD + "models:\n  - name: s\n    spec: strategy/self-max\n    params: &p {}\n  - name: t\n    spec: strategy/self-max\n    params: *p\n"
    rc, err, _ = _run(capsys, tmp_path, shared)
    assert rc == 0, err
