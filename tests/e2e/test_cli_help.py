"""The command line explains itself (issue 23, item 11): every argument of every command says
what it is, options show their defaults, and the main commands carry examples."""

from __future__ import annotations

import argparse

import pytest

from agorabench.cli import EXAMPLES, build_parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_argument_of_every_command_is_described():
    for name, parser in _commands().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"agora {name}: {action.dest} has no help"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_help_shows_defaults_and_examples(name, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([name, "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and f"agora {name}" in out.split("examples:")[1]
    assert "(default: None)" not in out and "(default: False)" not in out
    if name == "run":
        assert "games in flight at once (default: 8)" in out and "(default: runs/<study>.db)" in out
