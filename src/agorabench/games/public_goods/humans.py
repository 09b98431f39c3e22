"""Human reference data of the public goods game (``data/SOURCES.md`` says where each number comes
from, under which licence, how the shipped file was derived and what checks it).

- Fischbacher & Gächter (2010), the "C-experiment": 140 people in six sessions played ten
  periods of the linear public goods game in groups of four with 20 tokens each and a return of
  0.4 per token (the defaults of this family), the groups drawn anew every period (strangers),
  each stating with every contribution a belief about the others' average contribution. Every
  subject's decisions of the ten periods are shipped as ``data/fg2010_c_experiment.csv`` (from
  the authors' own data file of the article's web appendix; CC BY 4.0, ``data/LICENSE-aea``).
  :func:`fg2010_contributions` gives a period's 140 contributions (period 1: mean 7.89 tokens,
  a share of 0.3946; 33 people gave nothing, 18 everything); :func:`fg2010_sample` turns them
  into the yardstick's sample of ``contribution_share`` = contribution / 20.

The yardstick compares a game's first-round contributions only, and only in games of four
players with a return of 0.4 and no punishment stage (the sample's ``where``): the first period
is the one decision the two designs share (later periods of the C-experiment followed other
groups' play, not one's own group's), and a punishment stage changes what people contribute.

No published value is declared: the per-period means of Fischbacher & Gächter (2010), of Fehr &
Gächter (2000) with and without punishment, and of Herrmann, Thöni & Gächter (2008) could not be
read in a source we can cite (``data/SOURCES.md``, "Left out").
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ...analysis.yardstick import counted, HumanSample, Measure, read_rows, Source, Yardstick

DATA = Path(__file__).parent / "data"
#: Every C-experiment decision: subject, session, group, period, order, contribution, others, belief, predicted.
FG2010_FILE = DATA / "fg2010_c_experiment.csv"
#: The C-experiment's endowment (tokens), group size, return per token and number of periods.
FG2010_ENDOWMENT, FG2010_PLAYERS, FG2010_MPCR, FG2010_PERIODS = 20, 4, 0.4, 10

FG2010 = Source(
    key="Fischbacher & Gächter 2010",
    citation="Fischbacher, U. & Gächter, S. (2010). Social preferences, beliefs, and the dynamics of free riding in public goods experiments. American Economic Review 100(1), 541–556.",
    where="C-experiment, every subject's contribution and belief in periods 1–10: the authors' figae_beliefs&contributions.dta (web-appendix data, AEA supplement aer_100_1_541_data.zip, openICPSR doi:10.3886/E112335V1) as copied in github.com/sbordt/PublicGoodsHeterogeneity (commit 3c273f3), shipped as data/fg2010_c_experiment.csv",
    licence="CC BY 4.0 for data, the licence the AEA Data and Code Repository gave its migrated supplements (data/LICENSE-aea)",
    url="https://doi.org/10.3886/E112335V1",
)

CONTRIBUTION_SHARE = Measure(
    name="contribution_share",
    label="share of the endowment contributed",
    phase="contribute",
    column="contribution_share",
    lo=0.0,
    hi=1.0,
    bins=10,
    where={"round": 1},
    description="A player's first-round contribution as a share of its endowment (contribution / endowment), decided before it has seen anything of the others.",
)

#: The game configurations the sample is the yardstick for: Fischbacher & Gächter's design.
FG2010_WHERE = {"players": FG2010_PLAYERS, "mpcr": FG2010_MPCR, "punishment": False}


@lru_cache(maxsize=1)
def fg2010_rows() -> tuple[dict[str, str], ...]:
    """Every row of the shipped C-experiment file (read once): one subject in one period."""
    return tuple(read_rows(FG2010_FILE))


def fg2010_contributions(period: int = 1) -> list[int]:
    """The contributions (tokens of 20) of every subject in ``period`` (1–10), in file order."""
    if not 1 <= period <= FG2010_PERIODS:
        raise ValueError(f"the C-experiment has periods 1–{FG2010_PERIODS}, not {period}")
    want = str(period)
    return [int(r["contribution"]) for r in fg2010_rows() if r["period"] == want]


@lru_cache(maxsize=None)
def fg2010_sample(period: int = 1) -> HumanSample:
    """The contributions of ``period`` as a :class:`HumanSample` of ``contribution_share`` =
    contribution / 20, for games of the C-experiment's design (:data:`FG2010_WHERE`)."""
    values, counts = counted(c / FG2010_ENDOWMENT for c in fg2010_contributions(period))
    return HumanSample(
        measure=CONTRIBUTION_SHARE.name,
        values=values,
        counts=counts,
        source=FG2010,
        condition=f"C-experiment, period {period}: groups of 4, 20 tokens, return 0.4 per token, no punishment, groups re-drawn every period",
        where=FG2010_WHERE,
        note="Lab sessions run with z-Tree; each subject also stated a belief about the others' average contribution every period, and did the conditional-contribution P-experiment before (72 subjects) or after (68) this one.",
    )


#: The public goods game's human reference (the manifest's ``references``).
YARDSTICK = Yardstick(
    game="public_goods",
    measures=(CONTRIBUTION_SHARE,),
    load=lambda: (fg2010_sample(1),),
)
