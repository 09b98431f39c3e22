"""The Reports table of docs/analysis.md is the one the manifests make (issue 44 item 5)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from agorabench import families

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("analysis_table", ROOT / "scripts" / "analysis_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_table_is_the_generated_one():
    script = _script()
    text = (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
    assert script.with_table(text, families.definitions_table()) == text, "run python scripts/analysis_table.py"


def test_every_shipped_report_module_has_its_row_and_words():
    table = families.definitions_table()
    for family in families.families().values():
        for target in family.reports.values():
            module = target.partition(":")[0]
            assert family.report_docs.get(module), f"{family.name}: report_docs lacks {module}"
            path = (family.package.removeprefix("agorabench.") + module).replace(".", "/") + ".py"
            assert f"`{path}`" in table


def test_a_changed_manifest_changes_the_table():
    script = _script()
    text = "intro\n" + script.MARK + "\n| old |\n|---|\n\nafter\n"
    assert script.with_table(text, "| new |\n") == "intro\n" + script.MARK + "\n| new |\n\nafter\n"
