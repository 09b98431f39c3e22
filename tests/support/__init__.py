"""Code the tests share but that is no test itself: fake servers, process helpers, study files.

``pyproject.toml`` puts ``tests/`` on ``sys.path`` (``pythonpath``), so a test module writes
``from support.helpers import run_agora``; no test module imports another one."""
