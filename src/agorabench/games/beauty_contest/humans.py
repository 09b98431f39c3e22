"""Human reference data of the beauty contest: Nagel's (1995) guessing games (``data/SOURCES.md``
says where each number comes from, how the shipped file was read from the paper's figure and
what checks it).

- ``data/nagel1995_first_period.csv`` (columns ``p``, ``choice``, ``count``; p written as the
  fraction "1/2", "2/3" or "4/3"): every first-period choice of her three treatments as Figure 1
  (p. 1316) draws it, at whole numbers, digitised from the scan: p = 1/2 (sessions 1–3, n = 48,
  median 17, mean 27.06 against the printed 27.05), p = 2/3 (sessions 4–7, n = 67, median 33,
  mean 36.75 against 36.73) and p = 4/3 (sessions 8–10, n = 51, median 66, mean 60.12 against
  60.12). Her subjects could choose any real number; the paper says all but four choices were
  whole numbers, and the figure draws every choice at a whole number.
- Published values (:data:`YARDSTICK`'s ``published``): the first period's means and medians as
  Figure 1 prints them; the shares of the first period the text states (p. 1316); Table 1's
  mean and median of each session in periods 2–4 (p. 1321; a session is one group of 15–18, its
  size not printed, so n is empty); and the text's later-period statements (p. 1318): in the
  p = 4/3 sessions 100 was chosen by 16 %, 59 % and 68 % in periods 2, 3 and 4, and the median
  was 100 in periods 3 and 4; in the p = 1/2 sessions three of 48 chose 0 in period 4.

The yardstick compares the number chosen in a game's first round (measure ``guess``, 0–100, ten
bins) with one human sample per p. Each sample and published value applies to games with that p
and numbers from 0 to 100 (``where`` ``{"p": ..., "low": 0, "high": 100}``). The comparison
matches a number within 1e-3 (``agorabench.analysis.likeness``), so a study may write
p = 2/3 as the text "2/3" (stored as 0.6666666666666666), as that float, or as 0.667; 0.67
matches nothing. A period t > 1 value applies to round t of a game (``where`` ``round`` = t).
Nagel's groups had 15–18 players; the comparison does not ask for a group size.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ...analysis.yardstick import HumanSample, Measure, Published, read_rows, Source, Yardstick

DATA = Path(__file__).parent / "data"
#: Every first-period choice of Nagel's Figure 1: p, choice, count.
NAGEL_FILE = DATA / "nagel1995_first_period.csv"

CITATION = "Nagel, R. (1995). Unraveling in guessing games: an experimental study. American Economic Review 85(5), 1313–1326."

#: The choices read from the published figure.
NAGEL_FIGURE = Source(
    key="Nagel 1995 (Figure 1)",
    citation=CITATION,
    where="Figure 1, p. 1316: relative frequencies of all first-period choices per p, digitised from the scan (HumanStudy-Bench studies/study_009/source/) into data/nagel1995_first_period.csv",
    licence="cited values (read from a published figure; data/SOURCES.md)",
    url="https://github.com/HumanStudy-Hub/HumanStudy-Bench",
)
#: The values the paper prints.
NAGEL_TEXT = Source(
    key="Nagel 1995",
    citation=CITATION,
    where="Figure 1's printed means and medians (p. 1316), text pp. 1316 and 1318, Table 1 p. 1321 (means and medians of periods 1–4 per session)",
    licence="cited values",
    url="https://github.com/HumanStudy-Hub/HumanStudy-Bench",
)

#: The treatments: p as the file writes it -> p.
P_VALUES: dict[str, float] = {"1/2": 0.5, "2/3": 2 / 3, "4/3": 4 / 3}
#: Sessions of each treatment (Nagel's numbering).
SESSIONS = {"1/2": (1, 2, 3), "2/3": (4, 5, 6, 7), "4/3": (8, 9, 10)}
#: Her numbers ran from 0 to 100: the human data applies to games on that range.
RANGE = {"low": 0, "high": 100}

GUESS = Measure(
    name="guess",
    label="number chosen",
    phase="guess",
    column="guess",
    lo=0.0,
    hi=100.0,
    bins=10,
    where={"round": 1},
    description="The number a player chooses in the first round (0–100), in a game with Nagel's p and range.",
)


def p_text(p: float) -> str:
    """The shipped treatment whose p is nearest to ``p`` (as the file writes it)."""
    return min(P_VALUES, key=lambda k: (abs(P_VALUES[k] - p), k))


@lru_cache(maxsize=1)
def nagel_rows() -> tuple[tuple[str, int, int], ...]:
    """(p, choice, count) of every row of the shipped file, in file order."""
    return tuple((r["p"], int(r["choice"]), int(r["count"])) for r in read_rows(NAGEL_FILE))


def nagel_choices(p: str) -> list[int]:
    """Every first-period choice of the treatment ``p`` ("1/2", "2/3" or "4/3"), ascending."""
    if p not in P_VALUES:
        raise ValueError(f"Nagel (1995) has no treatment p = {p!r}: use one of {', '.join(P_VALUES)}")
    return [choice for q, choice, count in nagel_rows() if q == p for _ in range(count)]


@lru_cache(maxsize=None)
def _sample(p: str) -> HumanSample:
    found = [(choice, count) for q, choice, count in nagel_rows() if q == p]
    return HumanSample(
        measure=GUESS.name,
        values=tuple(float(c) for c, _ in found),
        counts=tuple(k for _, k in found),
        source=NAGEL_FIGURE,
        condition=f"p = {p}, first period (Nagel 1995, sessions {SESSIONS[p][0]}–{SESSIONS[p][-1]})",
        where={"p": P_VALUES[p], **RANGE},
        note="Classroom sessions of 15–18 students each, 20 DM to the winner of each of four periods; choices drawn at whole numbers as Figure 1 draws them.",
    )


def nagel_sample(p: float | str) -> HumanSample:
    """The first-period choices of Nagel's treatment with ``p`` (a number, or the text "2/3"),
    or of the shipped treatment nearest to it, as a :class:`HumanSample`."""
    if isinstance(p, str):
        if p in P_VALUES:
            return _sample(p)
        top, _, bottom = p.partition("/")
        p = float(Fraction(top) / Fraction(bottom)) if bottom else float(p)
    return _sample(p_text(float(p)))


def _is(*values: float) -> Any:
    """A predicate: the value is one of ``values``."""
    return lambda v: np.isin(np.asarray(v, dtype=float), values)


#: Table 1 (p. 1321): per session, the (mean, median) of periods 1–4.
TABLE_1: dict[int, tuple[tuple[float, float], ...]] = {
    1: ((23.7, 17), (10.9, 7), (5.3, 3), (8.1, 2)),
    2: ((33.2, 30), (12.1, 10), (3.8, 3.3), (13.0, 0.57)),
    3: ((24.2, 14), (10.2, 6), (2.4, 2.1), (0.4, 0.33)),
    4: ((39.7, 33), (28.6, 29), (20.2, 14), (16.7, 10)),
    5: ((37.7, 35), (20.2, 17), (10.0, 9), (3.2, 3)),
    6: ((32.9, 28), (20.3, 18), (16.7, 10), (8.3, 8)),
    7: ((36.4, 33), (26.5, 20), (16.7, 12.5), (8.7, 8)),
}
#: Table 1's rate of decrease of the mean and of the median from period 1 to 4, per session.
TABLE_1_RATES: dict[int, tuple[float, float]] = {1: (0.66, 0.88), 2: (0.61, 0.98), 3: (0.98, 0.97), 4: (0.58, 0.7), 5: (0.92, 0.91), 6: (0.75, 0.71), 7: (0.76, 0.76)}
#: Figure 1's printed first-period values per treatment: (n, mean, median); n from the text.
FIGURE_1: dict[str, tuple[int, float, float]] = {"1/2": (48, 27.05, 17), "2/3": (67, 36.73, 33), "4/3": (51, 60.12, 66)}


def _treatment_of(session: int) -> str:
    return next(p for p, ss in SESSIONS.items() if session in ss)


def _published() -> tuple[Published, ...]:
    out: list[Published] = []
    for p, (n, mean, median) in FIGURE_1.items():
        where = {"p": P_VALUES[p], **RANGE}
        condition = f"p = {p}, first period (sessions {SESSIONS[p][0]}–{SESSIONS[p][-1]} pooled)"
        out += [
            Published(GUESS.name, "mean", mean, n, NAGEL_TEXT, condition, where, note="Printed in Figure 1 (p. 1316)."),
            Published(GUESS.name, "median", median, n, NAGEL_TEXT, condition, where, note="Printed in Figure 1 (p. 1316)."),
        ]
    first = "first period (p. 1316)"
    for p, statistic, value, test, note in (
        ("1/2", "share choosing 0", 0.0, _is(0), "No subject chose 0 in the 1/2 and 2/3 sessions."),
        ("2/3", "share choosing 0", 0.0, _is(0), "No subject chose 0 in the 1/2 and 2/3 sessions."),
        ("1/2", "share above 50", 0.06, lambda v: np.asarray(v) > 50, "6 percent chose numbers greater than 50 (weakly dominated when p = 1/2)."),
        ("1/2", "share choosing 50", 0.08, _is(50), "8 percent chose 50."),
        ("2/3", "share above 67", 0.10, lambda v: np.asarray(v) > 67, "10 percent of the numbers were greater than 67."),
        ("2/3", "share choosing 66 or 67", 0.06, _is(66, 67), "6 percent were 66 or 67."),
        ("4/3", "share choosing 1, 99 or 100", 0.10, _is(1, 99, 100), "Only 10 percent chose 99, 100 or 1."),
    ):
        out.append(Published(GUESS.name, statistic, value, FIGURE_1[p][0], NAGEL_TEXT, f"p = {p}, {first}", {"p": P_VALUES[p], **RANGE}, note=note, test=test))
    for session, periods in TABLE_1.items():
        p = _treatment_of(session)
        for period in (2, 3, 4):
            mean, median = periods[period - 1]
            where = {"p": P_VALUES[p], "round": period, **RANGE}
            condition = f"p = {p}, session {session}, period {period}"
            note = "Table 1 (p. 1321); one session of 15–18 subjects, whose size the paper does not print."
            out += [
                Published(GUESS.name, "mean", mean, None, NAGEL_TEXT, condition, where, note=note),
                Published(GUESS.name, "median", median, None, NAGEL_TEXT, condition, where, note=note),
            ]
    later = {"p": P_VALUES["4/3"], **RANGE}
    for period, share in ((2, 0.16), (3, 0.59), (4, 0.68)):
        out.append(Published(GUESS.name, "share choosing 100", share, 51, NAGEL_TEXT, f"p = 4/3, period {period} (sessions 8–10 pooled)", {**later, "round": period},
                             note="p. 1318: 100 was chosen by 16 percent of the subjects in the second period and by 59 and 68 percent in the third and fourth.", test=_is(100)))
    for period in (3, 4):
        out.append(Published(GUESS.name, "median", 100.0, 51, NAGEL_TEXT, f"p = 4/3, period {period} (sessions 8–10 pooled)", {**later, "round": period},
                             note="p. 1318: in the 4/3 sessions the medians increase and are 100 in the third and fourth periods."))
    out.append(Published(GUESS.name, "share choosing 0", 3 / 48, 48, NAGEL_TEXT, "p = 1/2, period 4 (sessions 1–3 pooled)", {"p": 0.5, "round": 4, **RANGE},
                         note="p. 1318: in the fourth round more than half of the 1/2 sessions' numbers were below 1, but only three of 48 subjects chose 0.", test=_is(0)))
    return tuple(out)


#: The beauty contest's human reference (the manifest's ``references``).
YARDSTICK = Yardstick(
    game="beauty_contest",
    measures=(GUESS,),
    load=lambda: tuple(_sample(p) for p in P_VALUES),
    published=_published(),
)
