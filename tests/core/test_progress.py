"""The progress line and bar: ETA from turns (not only finished games), and what a run shows."""

import asyncio
import io

import pytest

from agorabench.core.progress import ProgressView, Snapshot
from agorabench.core.runner import Runner
from agorabench.core.study import load_study
from agorabench.store.store import SQLCache, Store
from support.studies import envy_points, model, paper_grid, scripted


def snap(**kw) -> Snapshot:
    base = dict(study="s", todo=10, finished=0, skipped=0, errors=0, turns_done=0, turns_finished_games=0, invalid=0, elapsed=10.0, calls=0, cache_hits=0, tokens=0, cached_tokens=0, cost=0.0, backoffs=0, rate_limited=0, in_flight_limit="")
    base.update(kw)
    return Snapshot(**base)


def test_eta_counts_turns_of_games_in_flight():
    # before any game finishes the total is unknown
    assert snap(turns_done=30).eta is None and "ETA --" in snap(turns_done=30).line()
    # 2 of 10 games finished with 40 turns each -> 400 expected; 100 turns done in 10 s -> 30 s left
    s = snap(finished=2, turns_finished_games=80, turns_done=100)
    assert s.expected_turns == 400 and s.eta == pytest.approx(30.0)
    # turns taken inside long games move the ETA although no further game finished
    later = snap(finished=2, turns_finished_games=80, turns_done=200, elapsed=20.0)
    assert later.eta == pytest.approx(20.0)
    assert snap(finished=10, todo=10, turns_finished_games=400, turns_done=400).eta == 0.0


def test_line_shows_rates_tokens_cost_invalid_and_backoffs():
    s = snap(finished=4, turns_finished_games=12, turns_done=14, invalid=3, calls=20, tokens=1234, cached_tokens=600, cost=0.25, backoffs=2, rate_limited=5, in_flight_limit="4/16")
    line = s.line()
    for part in ("games 4/10", "turns 14", "calls 20 (2.0/s", "tokens 1234 (600 prompt-cached)", "cost $0.2500", "invalid 25.0%", "rate limits 5 backoffs 2", "model calls in flight/allowed 4/16", "ETA "):
        assert part in line, part
    assert "turns 14 stopped (6 not played)" in s.line(final=True)  # an interrupted run is not "done"
    assert "turns 40 done" in snap(finished=10, todo=10, turns_finished_games=40, turns_done=40).line(final=True)


def hosted_study(url: str) -> str:
    """The hosted model at ``url`` against always-B on two matrices, both statuses and margins,
    and two peer moves: 32 games."""
    grid = paper_grid(matrix=["M1", "M2"], peer_move=["A", "D"])
    return envy_points("progress", [model("remote", "openai/fake", base_url=url), scripted("b", "always-b")], grid=grid)


@pytest.mark.parametrize("rich", [True, False])
def test_a_run_shows_progress(rich, tmp_path, write_study, fake_openai):
    url, _ = fake_openai("--latency", "0.02", "--rate-limit", "7")
    study = load_study(write_study(hosted_study(url)))
    out = io.StringIO()
    view = ProgressView(stream=out, rich=rich, plain_interval=0.2, width=300)
    store = Store(tmp_path / "p.db")
    runner = Runner(study, store, concurrency=4, cache=SQLCache(store), progress=view)
    stats = asyncio.run(runner.run())
    store.dispose()
    text = out.getvalue()
    assert stats.done == 32
    assert "games 32/32" in text and "calls " in text and "rate limits" in text and "backoffs" in text and "invalid 0.0%" in text
    if rich:
        assert "\x1b[" in text and "━" in text  # a rich bar drawn with terminal codes
    else:
        assert "\x1b[" not in text and text.count("[progress]") >= 2  # plain lines for logs
    final = runner.snapshot(32)
    assert final.rate_limited >= 1 and final.turns_done == final.turns_finished_games == 96


def test_the_progress_block_fits_80_columns_without_splitting_a_word():
    """Issue 23, item 11: at 80 columns no piece of the block is cut in the middle, and the
    adaptive limit says what it is."""
    from rich.console import Console

    s = snap(finished=4, turns_finished_games=12, turns_done=14, invalid=3, calls=123456, tokens=12345678, cached_tokens=600000, cost=1234.5, backoffs=2, rate_limited=5, in_flight_limit="4/16 8/16")
    console = Console(file=io.StringIO(), width=80, force_terminal=False, color_system=None)
    console.print(ProgressView._render(s, False, 80))
    lines = console.file.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    text = " ".join(line.strip() for line in lines)
    for piece in s.segments() + [s.head()]:
        assert piece in text, piece
    assert "model calls in flight/allowed 4/16 8/16" in text
