"""The original GovSim's report sentences live in one quoted-text file
(``scenarios/original_wording.toml``, MIT, ``LICENSE-GovSim`` beside it), not in our scenario
files; each is byte-identical to the original's source (checked against a copy of the original
repository where one is at hand: ``/work/.mirror`` or ``AGORA_GOVSIM_MIRRORS``), and it is read
only when a game looks one of them up."""

from __future__ import annotations

import ast
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from agorabench.games.commons import SCENARIOS
from agorabench.games.commons import scenario as sc

MIRRORS = Path(os.environ.get("AGORA_GOVSIM_MIRRORS", "/work/.mirror"))
#: The original's f-string fields as our templates write them.
FIELDS = {"{{ name }}": "{p.identity.name}", "{{ amount }}": "{agent_resource_num[p.agent_id]}"}


def _quoted() -> dict:
    return tomllib.loads((SCENARIOS / "original_wording.toml").read_text(encoding="utf-8"))


def _literals(source: str) -> list[str]:
    """Every string literal of a Python file, f-strings with their fields as written
    (``{expr}``) and implicit concatenations joined, as the parser joins them."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return out


def test_our_scenario_files_hold_no_quoted_sentence_and_the_licence_ships_beside_the_quotes():
    header = (SCENARIOS / "original_wording.toml").read_text(encoding="utf-8").split("\n[", 1)[0]
    assert "giorgiopiatti/GovSim" in header and "1d11adf047b24fa2ba0d44a1d4931015ea2e5210" in header and "MIT" in header and "LICENSE-GovSim" in header
    licence = (SCENARIOS / "LICENSE-GovSim").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Copyright (c) 2024 Giorgio Piatti" in licence
    for path in SCENARIOS.glob("*.*.toml"):
        text = tomllib.loads(path.read_text(encoding="utf-8"))["text"]
        assert not [k for k in text if k in sc.ORIGINAL_KEYS], path.name
        assert "Ladies and gentlemen" not in path.read_text(encoding="utf-8"), path.name


def test_the_quoted_file_is_read_only_when_a_sentence_is_looked_up():
    sc.original_wording.cache_clear()
    fishery = sc.get_scenario("fishery", "en")
    assert fishery.text["report_intro"].startswith("Good evening") and "system" in fishery.text
    assert sc.original_wording.cache_info().currsize == 0  # our own wording: the file is not read
    assert "report_line_original" in fishery.text and fishery.text["report_line_original"] == "{{ name }} caught {{ amount }} tons of fish."
    assert sc.original_wording.cache_info().currsize == 1
    assert "individual_line_original" not in sc.get_scenario("pasture", "en").text
    assert "report_intro_original" not in sc.get_scenario("fishery", "ja").text
    with pytest.raises(KeyError):
        sc.get_scenario("fishery", "ja").text["report_intro_original"]


@pytest.mark.parametrize("key", sorted(f"{s}.{lang}" for s, langs in _quoted().items() for lang in langs))
def test_each_quoted_sentence_is_the_originals_byte_for_byte(key):
    scenario, language = key.split(".")
    entry = _quoted()[scenario][language]
    repo = MIRRORS / entry["repository"].replace("/", "+") / "repo"
    if not repo.is_dir():
        pytest.skip(f"no copy of {entry['repository']} at {repo} (fetch it to check the quotes)")
    source = subprocess.run(["git", "--git-dir", str(repo), "show", f"{entry['commit']}:{entry['path']}"], capture_output=True, text=True, check=True).stdout
    lo, hi = (int(x) for x in entry["lines"].split("-"))
    within = "\n".join(source.splitlines()[lo - 1 : hi])
    literals = _literals(source)
    for name in sc.ORIGINAL_KEYS:
        if name not in entry:
            continue
        wanted = entry[name]
        for ours, theirs in FIELDS.items():
            wanted = wanted.replace(ours, theirs)
        # a whole literal (the report's line, an agent's line), or the intro before the report
        assert any(lit.strip() == wanted or lit == wanted + " {report}" for lit in literals), (name, wanted)
        first = wanted.split("{")[0].split()[0] if not wanted.startswith("{") else wanted.split("}")[1].split()[0]
        assert first in within, (name, entry["lines"])  # the lines named hold it
