"""Human reference data of the trust game: Berg, Dickhaut & McCabe's (1995) pairs.

``data/berg1995_pairs.csv`` holds every pair of their two treatments (``data/SOURCES.md`` says
where it comes from, under which licence, and how it was checked against the paper's scan):

- ``no_history`` (32 pairs, the game as agorabench plays it: one round, strangers, $10 each,
  the amount sent tripled, the trustee deciding on the amount sent);
- ``social_history`` (28 pairs: the same game, with a summary of the no-history results shown
  to every subject beforehand).

Columns: ``treatment``, ``session`` (the date heading its column in the paper's Appendix B),
``pair`` (1..n within the treatment), ``sent`` and ``returned`` (whole dollars).

The yardstick (:data:`YARDSTICK`, the manifest's ``references``) compares two decisions of a
game's first round with the no-history pairs:

- ``sent_share``: the investor's send / endowment, against each room-A subject's sent / $10
  (n = 32);
- ``returned_share``: the trustee's return / what it received (direct method), against
  returned / (3·sent) of the 30 pairs that sent something.

Both apply to games with a multiplier of 3, as in the experiment. Published values: the mean
amounts sent of both treatments as shares of the $10 (pp. 131 and 134). The mean paybacks the
paper reports ($4.66 and $6.46) are dollar means over all pairs, including those that sent
nothing, so they are on no measure's scale; the readers reproduce them (:func:`mean_returned`)
and the tests check them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ...analysis.yardstick import counted, HumanSample, Measure, Published, read_rows, Source, Yardstick

#: The shipped pairs (``data/SOURCES.md``).
PAIRS_FILE = Path(__file__).parent / "data" / "berg1995_pairs.csv"
NO_HISTORY, SOCIAL_HISTORY = "no_history", "social_history"
#: What each room-A subject could send, and what each dollar sent became, in the experiment.
BERG_ENDOWMENT, BERG_MULTIPLIER = 10, 3

CITATION = "Berg, J., Dickhaut, J. & McCabe, K. (1995). Trust, reciprocity, and social history. Games and Economic Behavior 10(1), 122–142."

#: The pair-level data: the paper's Appendix B as HumanStudy-Bench transcribed it.
BERG_PAIRS = Source(
    key="berg1995",
    citation=CITATION,
    where="Appendix B, p. 141 (every pair's amount sent and payback); transcribed in HumanStudy-Bench studies/study_012/source/ground_truth.json, checked against the paper's scan",
    licence="MIT (HumanStudy-Bench; data/LICENSE-humanstudy-bench)",
    url="https://github.com/HumanStudy-Hub/HumanStudy-Bench",
)
#: The means the paper states in its text.
BERG_TEXT = Source(key="berg1995-text", citation=CITATION, where="section 3, p. 131 (no history) and p. 134 (social history)", licence="cited values")

CONDITIONS = {
    NO_HISTORY: "no history (Berg et al. 1995): one round, strangers, double blind, $10 each, sent tripled",
    SOCIAL_HISTORY: "social history (Berg et al. 1995): as no history, with a summary of the no-history pairs shown first",
}

#: The measures of a game's first round compared with people.
MEASURES = (
    Measure(
        name="sent_share",
        label="share of the endowment sent",
        phase="send",
        column="sent_share",
        where={"round": 1},
        description="the investor's send / endowment in the first round",
    ),
    Measure(
        name="returned_share",
        label="share of the received points returned",
        phase="return",
        column="returned_share",
        where={"round": 1},
        description="the trustee's return / multiplier·send in the first round (direct method; only when something was sent)",
    ),
)


@dataclass(frozen=True)
class Pair:
    """One investor and trustee of the experiment: dollars sent (0–10) and returned (0–3·sent)."""

    treatment: str
    session: str
    pair: int
    sent: int
    returned: int


@lru_cache(maxsize=None)
def pairs(treatment: str | None = None) -> tuple[Pair, ...]:
    """The shipped pairs, of one treatment or of both (read once)."""
    found = tuple(Pair(r["treatment"], r["session"], int(r["pair"]), int(r["sent"]), int(r["returned"])) for r in read_rows(PAIRS_FILE))
    return found if treatment is None else tuple(p for p in found if p.treatment == treatment)


def mean_sent(treatment: str) -> float:
    """Mean dollars sent in ``treatment`` (all its pairs)."""
    found = pairs(treatment)
    return sum(p.sent for p in found) / len(found)


def mean_returned(treatment: str) -> float:
    """Mean dollars returned in ``treatment`` over all its pairs (a pair that sent nothing
    returned nothing), as the paper averages paybacks."""
    found = pairs(treatment)
    return sum(p.returned for p in found) / len(found)


def sent_shares(treatment: str) -> list[float]:
    """Each pair's sent / $10."""
    return [p.sent / BERG_ENDOWMENT for p in pairs(treatment)]


def returned_shares(treatment: str) -> list[float]:
    """returned / (3·sent) of each pair that sent something."""
    return [p.returned / (BERG_MULTIPLIER * p.sent) for p in pairs(treatment) if p.sent > 0]


class Samples(NamedTuple):
    """The human samples of one treatment, one per measure."""

    sent_share: HumanSample
    returned_share: HumanSample


@lru_cache(maxsize=None)
def samples(treatment: str = NO_HISTORY) -> Samples:
    """The treatment's decisions as :class:`HumanSample` s of the two measures; each is the
    yardstick of games with a multiplier of 3."""
    where = {"multiplier": BERG_MULTIPLIER}
    sent = HumanSample("sent_share", *counted(sent_shares(treatment)), source=BERG_PAIRS, condition=CONDITIONS[treatment], where=where, note="each room-A subject's dollars sent / 10")
    back = HumanSample("returned_share", *counted(returned_shares(treatment)), source=BERG_PAIRS, condition=CONDITIONS[treatment], where=where, note="returned / (3·sent), pairs that sent something")
    return Samples(sent, back)


#: Values the paper states, on the measures' scales.
PUBLISHED = (
    Published("sent_share", "mean", 0.516, 32, BERG_TEXT, CONDITIONS[NO_HISTORY], where={"multiplier": BERG_MULTIPLIER}, note="$5.16 of $10 sent on average (p. 131)"),
    Published("sent_share", "mean", 0.536, 28, BERG_TEXT, CONDITIONS[SOCIAL_HISTORY], where={"multiplier": BERG_MULTIPLIER}, note="$5.36 of $10 sent on average (p. 134)"),
)

#: The trust game's human reference: the no-history pairs as samples, the stated means.
YARDSTICK = Yardstick(game="trust", measures=MEASURES, load=lambda: tuple(samples(NO_HISTORY)), published=PUBLISHED)
