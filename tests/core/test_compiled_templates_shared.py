"""Compiled prompt templates are shared by every Prompts of a process, and only while the file,
its text and the environment's syntax settings are those they were compiled with."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from agorabench.core import game as game_mod
from agorabench.core.game import Prompts


@pytest.fixture
def compiles(monkeypatch) -> list[str]:
    """The names of the templates Jinja2 compiles from source while the test runs."""
    seen: list[str] = []
    real = jinja2.Environment.compile

    def counting(self, source, name=None, filename=None, raw=False, defer_init=False):
        seen.append(str(filename or name))
        return real(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    monkeypatch.setattr(game_mod, "_COMPILED", game_mod._CompiledTemplates())
    return seen


def _folder(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir(exist_ok=True)
    (folder / "ask.j2").write_text(text, encoding="utf-8")
    return folder


def test_a_second_prompts_reuses_the_compiled_template(tmp_path, compiles):
    folder = _folder(tmp_path, "{% if n %}\n  You hold {{ n }} points.\n{% endif %}\n")
    first = Prompts(folder).render("ask", n=3)
    assert len(compiles) == 1
    second = Prompts(folder).render("ask", n=4)
    assert len(compiles) == 1  # no new compilation
    assert (first, second) == ("You hold 3 points.", "You hold 4 points.")


def test_an_edited_template_is_compiled_again(tmp_path, compiles):
    folder = _folder(tmp_path, "Old {{ n }}.")
    assert Prompts(folder).render("ask", n=1) == "Old 1."
    _folder(tmp_path, "New {{ n }}.")
    assert Prompts(folder).render("ask", n=1) == "New 1."
    assert len(compiles) == 2


def test_other_syntax_settings_never_take_the_shared_code(tmp_path, compiles):
    folder = _folder(tmp_path, "{% if n %}\n  You hold {{ n }} points.\n{% endif %}\n")
    Prompts(folder).render("ask", n=3)
    plain = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), bytecode_cache=game_mod._COMPILED)
    alone = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)))
    assert plain.get_template("ask.j2").render(n=3) == alone.get_template("ask.j2").render(n=3)
    assert plain.get_template("ask.j2").render(n=3) != "You hold 3 points."
    assert len(compiles) == 3  # Prompts', then the plain environment's own, then the uncached one's


def test_the_cache_keeps_at_most_its_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(game_mod, "_COMPILED", game_mod._CompiledTemplates(limit=2))
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(4):
        (folder / f"t{i}.j2").write_text(f"T{i} {{{{ x }}}}", encoding="utf-8")
    p = Prompts(folder)
    assert [p.render(f"t{i}", x=1) for i in range(4)] == ["T0 1", "T1 1", "T2 1", "T3 1"]
    assert len(game_mod._COMPILED._code) == 2


def test_an_environment_with_other_filters_compiles_its_own(tmp_path, compiles):
    """Jinja2 builds how a filter is called (plain, or given the context) into the code."""
    folder = _folder(tmp_path, "{{ x | f }}")

    def environment(f) -> jinja2.Environment:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), bytecode_cache=game_mod._COMPILED)
        env.filters["f"] = f
        return env

    assert environment(lambda v: f"plain:{v}").get_template("ask.j2").render(x=1) == "plain:1"
    assert environment(jinja2.pass_context(lambda ctx, v: f"ctx:{v}")).get_template("ask.j2").render(x=1) == "ctx:1"
    assert len(compiles) == 2


def test_minus_zero_and_zero_render_apart(tmp_path):
    folder = _folder(tmp_path, "Your share: {{ x }}")
    p = Prompts(folder)
    assert [p.render("ask", x=v) for v in (0.0, -0.0, [0.0], [-0.0])] == ["Your share: 0.0", "Your share: -0.0", "Your share: [0.0]", "Your share: [-0.0]"]
