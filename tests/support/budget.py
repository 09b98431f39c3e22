"""Budget runs against the loopback provider whose model keeps the lake, for the budget tests of
commons studies (tests/e2e/test_budget_cap_at_256.py, test_plan_commons_budget.py): the server
(one per test module), the priced model entry that reaches it, and what a run left stored.

A test module that wants the server imports the ``cautious`` fixture by name (pytest finds a
fixture in the module's namespace)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import pytest

from support.providers import provider_server
from support.studies import model

#: The variable holding the loopback server's key; a test sets it (monkeypatch.setenv).
KEY_ENV = "LOOPBACK_KEY"


@pytest.fixture(scope="module")
def cautious() -> Iterator[str]:
    """tests/support/providers.py as an OpenAI-compatible server whose model keeps the lake
    (``--cautious``; its tokens are whitespace words); yields its base URL."""
    with provider_server("openai", cautious=True) as url:
        yield url


def remote(url: str, **settings: Any) -> dict[str, Any]:
    """The ``[[models]]`` entry ``remote``: gpt-4o-mini at the loopback server ``url`` with its
    key in ``KEY_ENV``; ``settings`` follow (max_tokens, prices, ...)."""
    return model("remote", "openai/gpt-4o-mini", base_url=url, api_key_env=KEY_ENV, **settings)


def game_outcomes(db: Path | str) -> tuple[dict[str, int], list[str]]:
    """The stored games by status, and the errors of those that failed."""
    with sqlite3.connect(db) as con:
        statuses = dict(con.execute("select status, count(*) from games group by status").fetchall())
        errors = [e for (e,) in con.execute("select error from games where status = 'error'")]
    return statuses, errors


def stopped_by_budget(out: str) -> int:
    """How many games the run's end line says the budget stopped."""
    found = re.search(r"(\d+) errors \((\d+) stopped by the budget\)", out)
    assert found, out
    return int(found.group(2))
