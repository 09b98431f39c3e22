"""Human reference data of the dictator game (``data/SOURCES.md`` says where each number comes
from, how the shipped file was derived and what checks it).

- MobLab: every dictator-game row behind Mei, Xie, Yuan & Jackson (2024), shipped as
  ``data/moblab_dictator.csv.gz`` (MIT, ``data/LICENSE-moblab``). The yardstick sample is the
  first-round decisions over a 100-point pie: n = 13,232, mean share given 0.2586, 26.1 % give 0,
  19.4 % give exactly half. :func:`moblab_sample` gives the same for any pie and round.
- Forsythe, Horowitz, Savin & Sefton (1994), the $5 dictator game with pay (April and September
  sessions pooled, n = 45): the shares the paper's text states (36 % give nothing, 22 % give an
  equal share or better) and the mean of the 45 offers its Appendix B lists ($50 / 45 = $1.11,
  a share of 0.2222). The offers are transcribed in :data:`FORSYTHE_OFFERS` so the tests check
  the transcription against the paper's own shares and sample sizes.

Engel's (2011) meta-study mean is left out: no source the project can cite could be read for it
(``data/SOURCES.md``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ...analysis.yardstick import counted, HumanSample, Measure, Published, read_rows, Source, Yardstick

DATA = Path(__file__).parent / "data"
#: Every row of MobLab's dictator games: participant, role, round, total, move.
MOBLAB_FILE = DATA / "moblab_dictator.csv.gz"

#: The condition every human value here is a yardstick for (config column -> value): the default,
#: anonymous framing; the observed framing is a condition neither source ran.
ANONYMOUS = {"framing": "anonymous"}

MOBLAB = Source(
    key="MobLab (Mei et al. 2024)",
    citation="Mei, Q., Xie, Y., Yuan, W. & Jackson, M. O. (2024). A Turing test of whether AI chatbots are behaviorally similar to humans. PNAS 121(9), e2313925121.",
    where="MobLab dictator-game decisions: data/dictator.csv of github.com/yutxie/ChatGPT-Behavioral (commit 69ec557), shipped as data/moblab_dictator.csv.gz",
    licence="MIT (Copyright (c) 2023 Yutong Xie; data/LICENSE-moblab)",
    url="https://github.com/yutxie/ChatGPT-Behavioral",
)

FORSYTHE = Source(
    key="Forsythe et al. 1994",
    citation="Forsythe, R., Horowitz, J. L., Savin, N. E. & Sefton, M. (1994). Fairness in simple bargaining experiments. Games and Economic Behavior 6, 347–369.",
    where="$5 dictator game with pay, April and September pooled: text p. 362 (shares), Appendix B p. 365 (the 45 offers); scan in HumanStudy-Bench studies/study_011/source/",
    licence="cited values",
    url="https://github.com/HumanStudy-Hub/HumanStudy-Bench",
)

#: The offers (dollars of a $5 pie) of the dictator game with pay as Appendix B (p. 365) lists
#: them: the April session (21 dictators) and the September session (24).
FORSYTHE_OFFERS: dict[str, tuple[float, ...]] = {
    "April": (0, 1, 1, 2.5, 0, 2.5, 0, 0, 0, 1, 3, 1, 2, 1.5, 2.5, 0, 0, 0, 1, 0, 1),
    "September": (0, 2, 0, 1, 0, 0, 3, 0, 1, 2.5, 2.5, 1, 2.5, 2.5, 0, 0, 2, 2, 1, 1, 1, 2.5, 1.5, 1),
}
#: The pie of those games, in dollars.
FORSYTHE_PIE = 5.0

GIVEN_SHARE = Measure(
    name="given_share",
    label="share of the endowment given",
    phase="give",
    column="given_share",
    lo=0.0,
    hi=1.0,
    bins=10,
    where={"round": 1},
    description="The dictator's first-round gift as a share of the endowment (give / endowment).",
)


@lru_cache(maxsize=1)
def moblab_rows() -> tuple[dict[str, str], ...]:
    """Every row of the shipped MobLab file (read once)."""
    return tuple(read_rows(MOBLAB_FILE))


def moblab_decisions(total: int = 100, round: int = 1) -> list[int]:
    """The amounts MobLab dictators (role ``first``) gave in round ``round`` of games over a pie
    of ``total`` points, in file order."""
    want_total, want_round = str(total), str(round)
    return [int(r["move"]) for r in moblab_rows() if r["role"] == "first" and r["total"] == want_total and r["round"] == want_round]


@lru_cache(maxsize=None)
def moblab_sample(total: int = 100, round: int = 1) -> HumanSample:
    """The MobLab decisions of :func:`moblab_decisions` as a :class:`HumanSample` of
    ``given_share`` = amount / total (``total`` ≥ 1: a pie of 0 has no share)."""
    if total < 1:
        raise ValueError(f"a pie of {total} points has no share to give")
    found = moblab_decisions(total, round)
    if not found:
        raise ValueError(f"MobLab has no dictator decision of round {round} over a pie of {total}")
    values, counts = counted(m / total for m in found)
    return HumanSample(
        measure=GIVEN_SHARE.name,
        values=values,
        counts=counts,
        source=MOBLAB,
        condition=f"MobLab players, round {round}, a pie of {total} points",
        where=ANONYMOUS,
        note="Online classroom and lab sessions on the MobLab platform; one decision per dictator and round.",
    )


def forsythe_offers() -> list[float]:
    """The 45 offers of :data:`FORSYTHE_OFFERS`, April then September."""
    return [x for session in FORSYTHE_OFFERS.values() for x in session]


def _forsythe_published() -> tuple[Published, ...]:
    offers = forsythe_offers()
    n = len(offers)
    condition = "$5 dictator game with pay (April and September sessions pooled)"
    return (
        Published(GIVEN_SHARE.name, "mean", sum(offers) / n / FORSYTHE_PIE, n, FORSYTHE, condition, ANONYMOUS,
                  note="Computed here from the 45 offers Appendix B lists ($50.00 / 45 = $1.11 of $5); the paper prints no mean."),
        Published(GIVEN_SHARE.name, "share giving 0", 0.36, n, FORSYTHE, condition, ANONYMOUS,
                  note="p. 362: 36 % of the players are pure gamesmen (offer nothing).", test=lambda v: v == 0),
        Published(GIVEN_SHARE.name, "share giving half or more", 0.22, n, FORSYTHE, condition, ANONYMOUS,
                  note="p. 362: 22 % give their opponents an equal share or better.", test=lambda v: v >= 0.5),
    )


#: The dictator game's human reference (the manifest's ``references``).
YARDSTICK = Yardstick(
    game="dictator",
    measures=(GIVEN_SHARE,),
    load=lambda: (moblab_sample(),),
    published=_forsythe_published(),
)
