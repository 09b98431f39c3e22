"""Human reference data of the ultimatum game (``data/SOURCES.md`` says where each number comes
from, how the shipped file was derived and what checks it).

- MobLab: every ultimatum (strategy method) row behind Mei, Xie, Yuan & Jackson (2024), shipped as
  ``data/moblab_ultimatum_strategy.csv.gz`` (MIT, ``data/LICENSE-moblab``). Each row is one
  player's two decisions in one round: a proposal ``propose`` and a minimum acceptable offer
  ``accept``, both out of ``total``. The file marks a missing answer with -1.
  :func:`moblab_round` gives a round's rows as they are (round 1 over 100 points: n = 6,296,
  the -1 marks included); the yardstick samples (:func:`moblab_sample`) keep, as Mei et al.'s
  own notebook does, the rows whose two answers both lie within 0..total: n = 5,993, mean
  offer share 0.4426, mean minimum share 0.3430.
- Forsythe, Horowitz, Savin & Sefton (1994), the $5 ultimatum game with pay (April and
  September sessions pooled, n = 43): the shares the text states (no proposer offers nothing,
  65 % offer at least an equal share) and, from the 43 offers Appendix B lists
  (:data:`FORSYTHE_OFFERS`), the mean offer ($97.75 / 43 = $2.27, a share of 0.4547) and the
  share accepted (40 of 43; the appendix marks the 3 rejected offers).
- Oosterbeek, Sloof & van de Kuilen (2004), a meta-analysis of 75 results from 37 papers: the
  mean offer of 40 % of the pie and the 16 % of offers rejected, as its abstract states them
  (it gives no n for either average, so n is empty).

The rejection rates are published values of the measure ``accepted`` (the direct-method
responder's answer, which the game notes on every valid turn), as the share accepted = 1 − the
share rejected. Left out (``data/SOURCES.md``): the pooled mean offer of $2.33 HumanStudy-Bench
gives for Forsythe et al.'s $5 ultimatum game with pay, which the paper's own offers do not give.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ...analysis.yardstick import counted, HumanSample, Measure, Published, read_rows, Source, Yardstick

DATA = Path(__file__).parent / "data"
#: Every row of MobLab's ultimatum (strategy method) games: participant, round, total, propose, accept.
MOBLAB_FILE = DATA / "moblab_ultimatum_strategy.csv.gz"
#: The mark of a missing answer in the MobLab file.
MISSING = -1

MOBLAB = Source(
    key="MobLab (Mei et al. 2024)",
    citation="Mei, Q., Xie, Y., Yuan, W. & Jackson, M. O. (2024). A Turing test of whether AI chatbots are behaviorally similar to humans. PNAS 121(9), e2313925121.",
    where="MobLab ultimatum-game (strategy method) decisions: data/ultimatum_strategy.csv of github.com/yutxie/ChatGPT-Behavioral (commit 69ec557), shipped as data/moblab_ultimatum_strategy.csv.gz",
    licence="MIT (Copyright (c) 2023 Yutong Xie; data/LICENSE-moblab)",
    url="https://github.com/yutxie/ChatGPT-Behavioral",
)

FORSYTHE = Source(
    key="Forsythe et al. 1994",
    citation="Forsythe, R., Horowitz, J. L., Savin, N. E. & Sefton, M. (1994). Fairness in simple bargaining experiments. Games and Economic Behavior 6, 347–369.",
    where="$5 ultimatum game with pay, April and September pooled: Table I p. 356 (sample sizes), text p. 362 (shares), Appendix B p. 365 (the 43 offers, rejections marked); scan in HumanStudy-Bench studies/study_011/source/",
    licence="cited values",
    url="https://github.com/HumanStudy-Hub/HumanStudy-Bench",
)

OOSTERBEEK = Source(
    key="Oosterbeek et al. 2004",
    citation="Oosterbeek, H., Sloof, R. & van de Kuilen, G. (2004). Cultural differences in ultimatum game experiments: evidence from a meta-analysis. Experimental Economics 7(2), 171–188.",
    where="abstract (meta-analysis of 37 papers with 75 results): mean offer 40 % of the pie, 16 % of offers rejected",
    licence="cited values",
    url="https://link.springer.com/article/10.1023/B:EXEC.0000026978.14316.74",
)

#: The offers (dollars of a $5 pie) of the ultimatum game with pay as Appendix B (p. 365) lists
#: them, April (20 proposers) then September (23), each as (offer, rejected).
FORSYTHE_OFFERS: dict[str, tuple[tuple[float, bool], ...]] = {
    "April": (
        (2, False), (2.5, False), (2.5, False), (1, False), (2.5, False), (1, True), (3, False), (2.5, False), (2.5, False), (2, True),
        (2.5, False), (2.5, False), (2.5, False), (2.5, False), (2.5, False), (2, False), (2.75, False), (2, False), (1, True), (2.5, False),
    ),
    "September": (
        (2.5, False), (2, False), (1.5, False), (3, False), (2, False), (2, False), (2.5, False), (1, False), (2.5, False), (2, False),
        (2.5, False), (2.5, False), (2.5, False), (3, False), (2.5, False), (2, False), (2.5, False), (2, False), (2.5, False), (2.5, False),
        (2.5, False), (2.5, False), (3, False),
    ),
}
#: The pie of those games, in dollars.
FORSYTHE_PIE = 5.0

OFFER_SHARE = Measure(
    name="offer_share",
    label="share of the pie offered",
    phase="offer",
    column="offer_share",
    lo=0.0,
    hi=1.0,
    bins=10,
    where={"round": 1},
    description="The proposer's first-round offer as a share of the pie (offer / pie), under either method: the proposer decides without knowing the responder's decision in both.",
)

MIN_SHARE = Measure(
    name="min_share",
    label="smallest share of the pie accepted",
    phase="minimum",
    column="min_share",
    lo=0.0,
    hi=1.0,
    bins=10,
    where={"round": 1},
    description="The strategy-method responder's first-round minimum acceptable offer as a share of the pie (minimum / pie).",
)

ACCEPTED = Measure(
    name="accepted",
    label="offer accepted",
    phase="respond",
    column="accepted",
    lo=0.0,
    hi=1.0,
    bins=2,
    where={"round": 1},
    description="The direct-method responder's first-round answer to the offer it sees: 1 accepted, 0 rejected (published acceptance rates only; no human sample).",
)


@lru_cache(maxsize=1)
def moblab_rows() -> tuple[dict[str, str], ...]:
    """Every row of the shipped MobLab file (read once)."""
    return tuple(read_rows(MOBLAB_FILE))


def moblab_round(total: int = 100, round: int = 1) -> list[tuple[int, int]]:
    """(propose, accept) of every MobLab row of round ``round`` over a pie of ``total``, in file
    order, as the file holds them (a missing answer is -1)."""
    want_total, want_round = str(total), str(round)
    return [(int(r["propose"]), int(r["accept"])) for r in moblab_rows() if r["total"] == want_total and r["round"] == want_round]


def moblab_decisions(total: int = 100, round: int = 1) -> list[tuple[int, int]]:
    """The rows of :func:`moblab_round` whose proposal and minimum both lie within 0..total (the
    filter of Mei et al.'s notebook ``plot.ipynb``; it drops every row with a missing answer)."""
    return [(p, a) for p, a in moblab_round(total, round) if 0 <= p <= total and 0 <= a <= total]


@lru_cache(maxsize=None)
def moblab_sample(measure: str, total: int = 100, round: int = 1) -> HumanSample:
    """The MobLab decisions of :func:`moblab_decisions` as a :class:`HumanSample` of
    ``offer_share`` = propose / total or ``min_share`` = accept / total."""
    column = {OFFER_SHARE.name: 0, MIN_SHARE.name: 1}.get(measure)
    if column is None:
        raise ValueError(f"MobLab has no sample of {measure!r}: use offer_share or min_share")
    if total < 1:
        raise ValueError(f"a pie of {total} points has no share")
    found = moblab_decisions(total, round)
    if not found:
        raise ValueError(f"MobLab has no ultimatum decision of round {round} over a pie of {total}")
    values, counts = counted(pair[column] / total for pair in found)
    what = "proposals" if column == 0 else "minimum acceptable offers"
    return HumanSample(
        measure=measure,
        values=values,
        counts=counts,
        source=MOBLAB,
        condition=f"MobLab players, round {round}, a pie of {total} points, strategy method ({what})",
        note="Online classroom and lab sessions on the MobLab platform; each player states a proposal and a minimum. Rows with a missing answer (-1) are left out, as in Mei et al.'s notebook.",
    )


def forsythe_offers() -> list[tuple[float, bool]]:
    """The 43 (offer, rejected) pairs of :data:`FORSYTHE_OFFERS`, April then September."""
    return [x for session in FORSYTHE_OFFERS.values() for x in session]


def _published() -> tuple[Published, ...]:
    offers = forsythe_offers()
    n = len(offers)
    amounts = [o for o, _ in offers]
    condition = "$5 ultimatum game with pay (April and September sessions pooled)"
    meta = "meta-analysis of 75 results from 37 papers (pies, countries and methods pooled)"
    return (
        Published(OFFER_SHARE.name, "mean", sum(amounts) / n / FORSYTHE_PIE, n, FORSYTHE, condition,
                  note="Computed here from the 43 offers Appendix B lists ($97.75 / 43 = $2.27 of $5); the paper prints no mean."),
        Published(OFFER_SHARE.name, "share offering 0", 0.0, n, FORSYTHE, condition,
                  note="p. 362: in the pooled $5 ultimatum games with pay there are no pure gamesmen (nobody offers nothing).", test=lambda v: v == 0),
        Published(OFFER_SHARE.name, "share offering half or more", 0.65, n, FORSYTHE, condition,
                  note="p. 362: 65 % offer at least an equal share of the pie.", test=lambda v: v >= 0.5),
        Published(ACCEPTED.name, "mean", sum(not rejected for _, rejected in offers) / n, n, FORSYTHE, condition,
                  note="Computed here from Appendix B, which marks 3 of the 43 offers rejected (40 / 43 accepted)."),
        Published(OFFER_SHARE.name, "mean", 0.40, None, OOSTERBEEK, meta,
                  note="Abstract: on average the proposer offers 40 % of the pie. It does not say how many of the 75 results enter the average."),
        Published(ACCEPTED.name, "mean", 0.84, None, OOSTERBEEK, meta,
                  note="Abstract: on average 16 % of the offers are rejected, shown as the share accepted (1 − 0.16). It does not say how many results enter the average."),
    )


#: The ultimatum game's human reference (the manifest's ``references``).
YARDSTICK = Yardstick(
    game="ultimatum",
    measures=(OFFER_SHARE, MIN_SHARE, ACCEPTED),
    load=lambda: (moblab_sample(OFFER_SHARE.name), moblab_sample(MIN_SHARE.name)),
    published=_published(),
)
