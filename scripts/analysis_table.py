"""Writes the Reports table of docs/analysis.md from the game manifests
(``agorabench.families.definitions_table``): the table after the line ``<!-- reports table -->``
is replaced up to the first line that is not a table row. ``--check`` only says whether the
committed table is the generated one (exit 1 when not)."""

from __future__ import annotations

import sys
from pathlib import Path

from agorabench.families import definitions_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "analysis.md"
MARK = "<!-- reports table: scripts/analysis_table.py writes it from the manifests -->"


def with_table(text: str, table: str) -> str:
    """``text`` with the table after :data:`MARK` replaced by ``table``."""
    head, mark, rest = text.partition(MARK + "\n")
    if not mark:
        raise SystemExit(f"{DOCS}: no line {MARK!r}")
    lines = rest.splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))
    return head + mark + table + "".join(lines[end:])


def main(argv: list[str]) -> int:
    text = DOCS.read_text(encoding="utf-8")
    new = with_table(text, definitions_table())
    if "--check" in argv:
        if new != text:
            print(f"{DOCS}: the Reports table differs from the manifests'; run python scripts/analysis_table.py")
            return 1
        return 0
    DOCS.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
