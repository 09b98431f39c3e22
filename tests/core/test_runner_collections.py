"""While games are played the garbage collector runs less often and skips what the process held
before; afterwards both are as they were (core.runner.rarer_collections)."""

from __future__ import annotations

import gc

import pytest

from agorabench.core.runner import PLAY_GC_THRESHOLD, rarer_collections


def test_collections_are_rarer_while_playing_and_restored_after():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    held = [object() for _ in range(10)]  # noqa: F841 - objects the process held before the games
    with rarer_collections():
        assert gc.get_threshold()[0] == max(PLAY_GC_THRESHOLD, before[0])
        assert gc.get_threshold()[1:] == before[1:]
        assert gc.get_freeze_count() > frozen  # what existed is left out of the passes
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_restored_when_the_games_end_in_an_error():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), rarer_collections():
        raise RuntimeError("a store failure")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_freeze_the_process_made_itself_is_left_to_it():
    gc.freeze()
    try:
        with rarer_collections():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
