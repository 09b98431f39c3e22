"""A run stopped by its store says what to do about the real cause (issue 28, item 1)."""

from __future__ import annotations


def test_a_store_failure_says_what_to_do_by_its_cause():
    from agorabench.core.runner import fix_hint

    assert fix_hint("could not store game g1: database or disk is full") == "free disk space"
    assert fix_hint("could not store game g1: integer out of range") == "fix the cause named above"
    assert "restore" in fix_hint("database file is damaged: x.db: malformed")
