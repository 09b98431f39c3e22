"""The command line's first hour (issue 41 item 13): examples that run, errors in one line that
name what to write instead, and closing lines that say what happened. Scripted studies and real
SQLite (seconds); the demo's own examples are checked in test_demo_report_truth.py."""

from __future__ import annotations

import re

import pytest
from support.helpers import agora, one_line_error
from support.studies import envy_points, model, paper_grid, scripted, study_toml

from agorabench import families
from agorabench.cli import build_parser, command_examples
from agorabench.models.providers import PROVIDERS

ULTIMATUM = study_toml("firsthour", "ultimatum", matchups="ordered_pairs", seed=0, models=[scripted("fair", "fair"), scripted("selfish", "selfish")])


def test_every_command_that_reads_data_has_examples_naming_real_kinds():
    for command in ("run", "plan", "report", "export", "show", "analyze", "import", "profile", "serve"):
        assert command_examples(command), command
    assert "KIND" not in command_examples("analyze")
    kinds = set(re.findall(r"agora analyze (\S+)", command_examples("analyze")))
    assert kinds == set(families.analyzer_names())
    formats = set(re.findall(r"agora import (\S+)", command_examples("import")))
    assert formats == set(families.importer_names())
    parser = build_parser()
    for command in ("profile", "import", "analyze"):  # each example parses as the command it shows
        for line in command_examples(command).splitlines():
            words = line.split("#")[0].split()[1:]
            assert parser.parse_args(words).command == command, line
    assert "--reference MODEL" in parser._subparsers._group_actions[0].choices["analyze"].format_help()  # shown under --help


def test_a_game_id_after_an_option_is_read_and_a_missing_game_said_plainly(write_study, tmp_path, capsys):
    path, db = write_study(ULTIMATUM), str(tmp_path / "u.db")
    assert agora(capsys, "run", str(path), "--db", db, "--quiet")[0] == 0
    rc, out, _ = agora(capsys, "show", str(path), "--db", db)
    first = out.split()[1]
    rc, out, err = agora(capsys, "show", str(path), "--db", db, first[:8])  # the id after --db
    assert rc == 0 and out.startswith(f"game {first}"), err
    rc, _, err = agora(capsys, "show", str(path), "--db", db, "--first-invalid")
    line = one_line_error(rc, err, "no game in study 'firsthour' with an invalid turn")
    assert "no a game" not in line
    with pytest.raises(SystemExit) as stop:  # two words where one id goes: argparse's own message
        agora(capsys, "show", str(path), "--db", db, first[:8], "more")
    assert stop.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err


def test_an_unknown_spec_is_one_line_naming_every_form_and_provider(write_study, capsys):
    path = write_study(ULTIMATUM)
    for command in (["run", "--dry-run"], ["plan"]):
        rc, _, err = agora(capsys, command[0], str(path), *command[1:], "--model", "mystery", "--model", "strategy/fair")
        line = one_line_error(rc, err, "unknown model spec 'mystery'", "http/URL", "NAME@URL", "strategy/NAME", "local")
        assert all(provider in line for provider in PROVIDERS), line


def test_an_unknown_strategy_is_one_line_in_a_plan_as_in_a_run(write_study, tmp_path, capsys):
    path = write_study(ULTIMATUM.replace('"strategy/selfish"', '"strategy/greedy"'))
    for command in (["plan"], ["run", "--dry-run"], ["run", "--db", str(tmp_path / "g.db")]):
        rc, _, err = agora(capsys, command[0], str(path), *command[1:])
        one_line_error(rc, err, "game 'ultimatum' has no strategy 'greedy'", "strategy/selfish")


def test_a_money_budget_over_unpriced_models_is_noted_in_a_dry_run(write_study, fake_openai, capsys):
    url, _ = fake_openai()
    free = model("free", "openai/fake", base_url=url, max_tokens=16)
    path = write_study(envy_points("unpriced_budget", [free, scripted("b", "always-b")], grid=paper_grid(matrix=["M1"], peer_status=["leading"], margin=["marginal"], peer_move=["A"])))
    rc, out, err = agora(capsys, "run", str(path), "--budget", "5", "--dry-run")
    assert rc == 0 and "budget $5.00:" in out
    assert "agora: note: the money budget counts nothing for 'free' (no prices); a token budget caps every model" in err
    rc, out, err = agora(capsys, "run", str(path), "--budget-tokens", "5000", "--dry-run")
    assert rc == 0 and "money budget" not in err
