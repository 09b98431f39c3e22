"""``agora plan STUDY --judge MODEL --taxonomy FILE``: the judge pass priced before the run, on
its own line beside the run's cost, by the same function as ``agora judge --dry-run``. No server:
the plan asks nobody (a judge at a closed loopback port proves it)."""

from __future__ import annotations

import re

from support.helpers import agora, one_line_error
from support.studies import judged_commons

from agorabench.core.study import load_study
from agorabench.judging.planned import _to_play
from agorabench.loop import run as run_loop

JUDGE = "openai/judge-1@http://127.0.0.1:9/v1"  # port 9 (discard): nothing listens; nothing is asked

# scripted commons seats whose remarks are the same in every play (so the estimate is exact)
STUDY = judged_commons("planned_judge")

LINE = re.compile(r"judge (\S+): ~?([\d,]+) message\(s\) to code \(([\d,]+) already coded(?:; ~([\d,]+) from the ([\d,]+) game\(s\) still to play)?\), .* ~([\d,]+) input tokens, ≤ ([\d,]+) output tokens, (.*)$")


def _judge_line(out: str) -> str:
    [line] = [x for x in out.splitlines() if x.startswith("judge ")]
    return line


def _numbers(line: str) -> tuple:
    m = LINE.match(line)
    assert m, line
    return m.groups()


def test_the_plan_prices_the_judge_pass_before_and_after_the_run(tmp_path, capsys):
    study = tmp_path / "planned_judge.toml"
    study.write_text(STUDY)
    db = str(tmp_path / "planned.db")
    prices = ("--judge-price-input", "1", "--judge-price-output", "2")
    rc, before, _ = agora(capsys, "plan", str(study), "--db", db, "--judge", JUDGE, "--taxonomy", "cooperation", *prices)
    assert rc == 0
    judge, n, done, planned, games, tokens_in, tokens_out, money = _numbers(_judge_line(before))
    assert judge == "openai/judge-1" and done == "0" and planned == n and games == "8"  # 8 games to play, nothing stored
    assert int(n.replace(",", "")) > 0 and int(tokens_out.replace(",", "")) == int(n.replace(",", "")) * 256  # the judge's bound per message
    dollars = (int(tokens_in.replace(",", "")) * 1 + int(tokens_out.replace(",", "")) * 2) / 1e6
    assert abs(float(money.removeprefix("≤ $")) - dollars) < 1e-3
    assert f"run and judge: $0.0000 + {money} = {money}" in before  # a scripted study's run costs nothing
    assert not (tmp_path / "planned.db").exists()  # the plan creates no database

    rc, _, _ = agora(capsys, "run", str(study), "--db", db, "--quiet")
    assert rc == 0
    rc, after, _ = agora(capsys, "plan", str(study), "--db", db, "--judge", JUDGE, "--taxonomy", "cooperation", *prices)
    assert rc == 0
    rc, dry, _ = agora(capsys, "judge", str(study), "--db", db, "--judge", JUDGE, "--taxonomy", "cooperation", "--dry-run", "--price-input", "1", "--price-output", "2")
    assert rc == 0
    # the stored messages priced as `agora judge --dry-run` prices them, line for line
    assert _judge_line(after) == _judge_line(dry)
    # and the estimate before the run was what the run's messages cost (scripted remarks)
    _, n2, done2, planned2, _, in2, out2, money2 = _numbers(_judge_line(after))
    assert (n2, in2, out2, money2) == (n, tokens_in, tokens_out, money) and done2 == "0" and planned2 is None
    # --kind narrows the pass; an unknown kind prices nothing
    rc, agendas, _ = agora(capsys, "plan", str(study), "--db", db, "--judge", JUDGE, "--taxonomy", "cooperation", "--kind", "agenda")
    assert rc == 0 and _numbers(_judge_line(agendas))[1] == "0"


def test_a_language_models_message_is_priced_at_its_whole_answer(tmp_path):
    study = tmp_path / "llm_judge.toml"
    study.write_text(STUDY.replace('{name = "s2", spec = "strategy/greedy"}', '{name = "m", spec = "openai/player@http://127.0.0.1:9/v1"}'))
    s = load_study(str(study))
    short, games = run_loop(_to_play(s, set(), 2, 10, None))
    long, _ = run_loop(_to_play(s, set(), 2, 110, None))
    assert games == 8 and set(short) == {"chat"} and short["chat"][0] == long["chat"][0] > 0
    # the model's remarks at 4 characters a token of its output per call (a mean of 2 plays)
    extra = long["chat"][1] - short["chat"][1]
    assert extra > 0 and extra % 200 == 0

def test_judge_options_are_checked_in_one_line(tmp_path, capsys):
    study = tmp_path / "planned_judge.toml"
    study.write_text(STUDY)
    one_line_error(*agora(capsys, "plan", str(study), "--judge", JUDGE)[::2], "--taxonomy")
    one_line_error(*agora(capsys, "plan", str(study), "--taxonomy", "cooperation")[::2], "--judge")
    one_line_error(*agora(capsys, "plan", str(study), "--judge", "s1", "--taxonomy", "cooperation")[::2], "language model")
    one_line_error(*agora(capsys, "plan", str(study), "--judge", JUDGE, "--judge", JUDGE, "--taxonomy", "cooperation")[::2], "twice")
    one_line_error(*agora(capsys, "plan", str(study), "--judge", JUDGE, "--taxonomy", str(tmp_path / "none.toml"))[::2], "taxonomy")


def test_run_dry_run_prices_the_judge_pass_as_the_plan_does(tmp_path, capsys):
    study = tmp_path / "planned_judge.toml"
    study.write_text(STUDY)
    db = str(tmp_path / "dry.db")
    options = ("--db", db, "--judge", JUDGE, "--taxonomy", "cooperation", "--judge-price-input", "1", "--judge-price-output", "2")
    rc, planned, _ = agora(capsys, "plan", str(study), *options)
    assert rc == 0
    rc, dry, _ = agora(capsys, "run", str(study), "--dry-run", *options)
    assert rc == 0
    assert dry == planned and _judge_line(dry).startswith("judge openai/judge-1: ")  # the same lines, the judge's included
    assert "run and judge: $0.0000 + ≤ $" in dry
    assert not (tmp_path / "dry.db").exists()  # nothing played, no database made
    # without --dry-run a run judges nothing: said in one line, before anything is played
    one_line_error(*agora(capsys, "run", str(study), "--db", db, "--judge", JUDGE, "--taxonomy", "cooperation")[::2], "--dry-run")
    one_line_error(*agora(capsys, "run", str(study), "--db", db, "--dry-run", "--judge-price-input", "1")[::2], "--taxonomy")
    assert not (tmp_path / "dry.db").exists()
