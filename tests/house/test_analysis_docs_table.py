"""The Reports table of docs/analysis.md is the one the manifests make (issue 44 item 5)."""

from __future__ import annotations

from pathlib import Path

from support.helpers import load_script

from agorabench import families

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_table_is_the_generated_one():
    script = load_script("analysis_table")
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
    script = load_script("analysis_table")
    text = "intro\n" + script.MARK + "\n| old |\n|---|\n\nafter\n"
    assert script.with_table(text, "| new |\n") == "intro\n" + script.MARK + "\n| new |\n\nafter\n"
