"""Human reference data of the prisoner's dilemma: Shafir & Tversky's (1992) Experiment 1.

``data/shafir_tversky_1992_triads.csv`` holds their Table 1 (p. 455) as counts of response
triads (``data/SOURCES.md`` says where each number was read and how it was checked): 80
Princeton undergraduates played one-shot prisoner's dilemmas, each against a different partner;
each of 444 games was met three times, once with the other's choice unknown, once told the other
had competed (defected) and once told the other had cooperated. One row per pattern of the three
choices (``if_other_competed``, ``if_other_cooperated``, ``if_unknown``: "cooperate" or
"compete") with its number of ``triads``. The readers reproduce the paper's figures:

- other's choice unknown: 164 of 444 cooperated (36.9 %; the text's 37 %);
- told the other competed: 14 of 444 (3 %); told the other cooperated: 73 of 444 (16 %);
- compete when told either choice, cooperate when not told: 113 of 444 triads (25 %).

The yardstick (:data:`YARDSTICK`, the manifest's ``references``) compares the measure
``cooperate`` (the first-round choice: 1 cooperate, 0 defect) of one-shot games with the unknown
condition, the situation agorabench's one-shot game puts a player in: a sample of 280 zeros and
164 ones. The two conditions in which the other's choice was told are published values shown for
people only: agorabench's game never tells a player the other's choice before its own.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ...analysis.yardstick import HumanSample, Measure, Published, read_rows, Source, Yardstick

#: The shipped triads (``data/SOURCES.md``).
TRIADS_FILE = Path(__file__).parent / "data" / "shafir_tversky_1992_triads.csv"
#: The paper's words for the two choices.
COOPERATE, COMPETE = "cooperate", "compete"
#: The three conditions, as the file's columns.
UNKNOWN, TOLD_COMPETED, TOLD_COOPERATED = "if_unknown", "if_other_competed", "if_other_cooperated"

CITATION = "Shafir, E. & Tversky, A. (1992). Thinking through uncertainty: nonconsequential reasoning and choice. Cognitive Psychology 24(4), 449–474."

#: The triads: the paper's Table 1, with the counts HumanStudy-Bench transcribed.
TRIADS = Source(
    key="Shafir & Tversky 1992",
    citation=CITATION,
    where="Experiment 1, Table 1 (p. 455; 444 PD triads of 80 subjects) and its text (p. 455: 3 %, 16 %, 37 %); counts as in HumanStudy-Bench studies/study_010/source/ground_truth.json, checked against the paper's scan",
    licence="MIT (HumanStudy-Bench; data/LICENSE-humanstudy-bench)",
    url="https://github.com/HumanStudy-Hub/HumanStudy-Bench",
)

#: The conditions in words.
CONDITIONS = {
    UNKNOWN: "one-shot prisoner's dilemmas, the other player's choice unknown (Shafir & Tversky 1992, Experiment 1)",
    TOLD_COMPETED: "one-shot prisoner's dilemmas, told beforehand that the other player had competed (defected)",
    TOLD_COOPERATED: "one-shot prisoner's dilemmas, told beforehand that the other player had cooperated",
}

#: The decision compared with people: a one-shot game's choice.
COOPERATE_MEASURE = Measure(
    name="cooperate",
    label="chose to cooperate",
    phase="choose",
    column="cooperate",
    lo=0.0,
    hi=1.0,
    bins=2,
    where={"round": 1},
    description="The first-round choice: 1 cooperate, 0 defect (a binary distribution is whole by its share).",
)


class Triad(NamedTuple):
    """One pattern of a subject's three choices in a PD triad and how many triads showed it."""

    if_other_competed: str
    if_other_cooperated: str
    if_unknown: str
    triads: int


@lru_cache(maxsize=1)
def triads() -> tuple[Triad, ...]:
    """The shipped rows (read once)."""
    return tuple(Triad(r[TOLD_COMPETED], r[TOLD_COOPERATED], r[UNKNOWN], int(r["triads"])) for r in read_rows(TRIADS_FILE))


def games() -> int:
    """The number of triads (each game met in all three conditions): 444."""
    return sum(t.triads for t in triads())


def cooperated(condition: str) -> int:
    """How many of the games of ``condition`` (a column: :data:`UNKNOWN`, :data:`TOLD_COMPETED`,
    :data:`TOLD_COOPERATED`) ended in the subject cooperating."""
    if condition not in CONDITIONS:
        raise ValueError(f"no condition {condition!r}: use one of {sorted(CONDITIONS)}")
    return sum(t.triads for t in triads() if getattr(t, condition) == COOPERATE)


def share(condition: str) -> float:
    """cooperated(condition) / 444."""
    return cooperated(condition) / games()


def disjunction_triads() -> int:
    """Triads that compete when told either choice but cooperate when not told (the paper's
    disjunction pattern): 113."""
    return sum(t.triads for t in triads() if (t.if_other_competed, t.if_other_cooperated, t.if_unknown) == (COMPETE, COMPETE, COOPERATE))


@lru_cache(maxsize=1)
def unknown_sample() -> HumanSample:
    """The unknown condition as a :class:`HumanSample` of ``cooperate``: 0 (competed) 280 times,
    1 (cooperated) 164 times; the yardstick of one-shot games."""
    yes = cooperated(UNKNOWN)
    return HumanSample(
        measure=COOPERATE_MEASURE.name,
        values=(0.0, 1.0),
        counts=(games() - yes, yes),
        source=TRIADS,
        condition=CONDITIONS[UNKNOWN],
        where={"horizon": "one-shot"},
        note="444 decisions of 80 subjects (four or six games each; who made which is not published) in six PDs whose points the paper does not print (its typical matrix, Fig. 2, gives the game's defaults: 75, 85, 25, 30); each game against a different partner.",
    )


def _published() -> tuple[Published, ...]:
    n = games()
    note = "A condition agorabench's game does not play (it never tells a player the other's choice before its own): shown for people only. p. 455; Table 1A."
    return (
        Published(COOPERATE_MEASURE.name, "share cooperating when told the other competed", cooperated(TOLD_COMPETED) / n, n, TRIADS, CONDITIONS[TOLD_COMPETED],
                  note=f"{cooperated(TOLD_COMPETED)} of {n} (the text's 3 %). " + note),
        Published(COOPERATE_MEASURE.name, "share cooperating when told the other cooperated", cooperated(TOLD_COOPERATED) / n, n, TRIADS, CONDITIONS[TOLD_COOPERATED],
                  note=f"{cooperated(TOLD_COOPERATED)} of {n} (the text's 16 %). " + note),
    )


#: The prisoner's dilemma's human reference (the manifest's ``references``).
YARDSTICK = Yardstick(
    game="prisoners_dilemma",
    measures=(COOPERATE_MEASURE,),
    load=lambda: (unknown_sample(),),
    published=_published(),
)
