"""The command line starts at once (issue 44, item 7): ``agora --help`` and ``agora games``
import no heavy package. Each runs in a fresh interpreter, since this test process has imported
them for other tests."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.helpers import ROOT

#: Packages that cost tenths of a second, or that only some commands need.
HEAVY = ("pandas", "numpy", "statsmodels", "matplotlib", "onnxruntime", "llama_cpp", "ray", "fastapi", "uvicorn", "scipy")

#: What each command prints on stderr after it ran: the heavy packages it imported.
PROBE = """
import sys
from agorabench.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(m for m in {names!r} if m in sys.modules), file=sys.stderr)
"""


def imported(args: list[str], names: tuple[str, ...]) -> list[str]:
    """The packages among ``names`` that ``agora ARGS`` has imported when it is done."""
    done = subprocess.run([sys.executable, "-c", PROBE.format(names=names), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr.split()


@pytest.mark.parametrize("args", [["--help"], ["games"], ["run", "--help"]])
def test_no_heavy_package(args: list[str]) -> None:
    assert imported(args, HEAVY) == [], f"agora {' '.join(args)} imports heavy packages"


def test_help_reads_no_study_and_no_database() -> None:
    """``agora --help`` loads neither the store's engine nor the study schema and its game rules."""
    assert imported(["--help"], ("sqlalchemy", "pydantic", "jinja2", "agorabench.core.study", "agorabench.store.store")) == []
