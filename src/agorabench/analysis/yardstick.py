"""People as the yardstick: human reference data of a game and the measures that compare models
with it.

A family declares, per game, a :class:`Yardstick` (the manifest's ``references``): the
:class:`Measure` s of the game's decisions (which turn phase, which noted value, on which range)
and, for each, the human data the field has — whole distributions of people's decisions
(:class:`HumanSample`, from files shipped inside the family with their licence) and published
summary values (:class:`Published`, each with its citation and n). Nothing is downloaded: a
sample's ``load`` reads the family's own files.

The comparison (:func:`compare`) puts every model (and the lab's own people, pooled as
``human``) beside each human sample:

- the mean of the measure with its 95 % interval (clustered by game, a person's decisions by
  participant);
- Mei, Xie, Yuan & Jackson's (2024, PNAS 121(9) e2313925121) behavioural Turing score: one
  human decision h and one model decision m are drawn; both are placed in the bins of the
  human histogram (``bins`` equal bins over ``[lo, hi]``, the last one closed); the model
  *wins* when m's bin holds a larger share of the human decisions than h's, *ties* when the
  shares are equal, and *loses* otherwise. The shares are computed exactly from the two
  histograms, ``win = sum_ij q_j p_i [p_j > p_i]`` (p: human bin shares, q: the model's),
  not by simulation; ``likeness = win + tie / 2`` is 0.5 for a model that behaves as the
  people do (the human-vs-human baseline, drawn the same way from the human data twice);
- the Wasserstein (earth mover's) distance between the two distributions, in the measure's
  units, and the two-sample Kolmogorov–Smirnov statistic D with its p-value (asymptotic for
  large samples; conservative where decisions are whole numbers with ties).

Intervals of the Turing shares are percentile bootstraps over ``reps`` resamples of the model's
clusters; the human data is the yardstick and is held fixed (its own sampling is not in the
intervals: a small human sample, such as Berg et al.'s 32 senders, ranks its bins less surely
than the interval says).
"""

from __future__ import annotations

import gzip
import csv
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

#: Name of the reference rows of a comparison (the shipped human data).
REFERENCE = "human (reference)"


@dataclass(frozen=True)
class Source:
    """Where human data comes from: ``citation`` (the full reference), ``where`` (the file,
    table or figure within it), ``licence`` (of shipped files; "cited values" for numbers
    quoted from a publication) and an optional ``url``."""

    key: str
    citation: str
    where: str
    licence: str
    url: str = ""


@dataclass(frozen=True)
class Measure:
    """One decision of a game compared with people: the turns of ``phase`` (valid ones only)
    whose ``where`` columns equal the given values (e.g. ``{"round": 1}``), and the value in
    their column ``column`` (a value the game noted with ``table.note_metrics``), on the range
    ``[lo, hi]`` that the Turing score's ``bins`` equal bins divide."""

    name: str
    label: str
    phase: str
    column: str
    lo: float = 0.0
    hi: float = 1.0
    bins: int = 10
    where: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise ValueError(f"measure {self.name!r}: its range [{self.lo}, {self.hi}] is empty")
        if self.bins < 1:
            raise ValueError(f"measure {self.name!r}: bins must be at least 1, not {self.bins}")


@dataclass(frozen=True)
class HumanSample:
    """People's decisions of one measure as distinct ``values`` with their ``counts`` (on the
    measure's scale), from ``source``, under ``condition`` (in words). ``where``: the game
    configurations it is the yardstick for (config column -> value, e.g. ``{"p": 2/3}``;
    empty: every configuration)."""

    measure: str
    values: tuple[float, ...]
    counts: tuple[int, ...]
    source: Source
    condition: str
    where: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""

    def __post_init__(self) -> None:
        if len(self.values) != len(self.counts) or not self.values:
            raise ValueError(f"human sample of {self.measure!r} ({self.source.key}): values and counts must be equally long and not empty")
        if any(c < 0 for c in self.counts) or sum(self.counts) <= 0:
            raise ValueError(f"human sample of {self.measure!r} ({self.source.key}): counts must be whole numbers ≥ 0 with a positive total")

    @property
    def n(self) -> int:
        return int(sum(self.counts))

    def array(self) -> tuple[np.ndarray, np.ndarray]:
        """(values, counts) as numpy arrays."""
        return np.asarray(self.values, dtype=float), np.asarray(self.counts, dtype=float)

    def mean(self) -> float:
        v, c = self.array()
        return float((v * c).sum() / c.sum())

    def share(self, test: Callable[[np.ndarray], np.ndarray]) -> float:
        """The share of the decisions whose value passes ``test`` (a vectorised predicate)."""
        v, c = self.array()
        return float(c[test(v)].sum() / c.sum())

    def median(self) -> float:
        """The median decision (the mean of the two middle ones for an even n)."""
        v, c = self.array()
        order = np.argsort(v)
        v, c = v[order], c[order]
        cum = np.cumsum(c)
        n = cum[-1]
        lower = v[np.searchsorted(cum, (n + 1) // 2)]
        upper = v[np.searchsorted(cum, n // 2 + 1)]
        return float((lower + upper) / 2)

    def draw(self, rng: Any) -> float:
        """One decision drawn from the sample with ``rng`` (a :class:`random.Random`): a value
        with probability count / n."""
        pick = rng.random() * self.n
        total = 0.0
        for value, count in zip(self.values, self.counts):
            total += count
            if pick < total:
                return float(value)
        return float(self.values[-1])


@dataclass(frozen=True)
class Published:
    """A value a publication reports where the decisions themselves are not public:
    ``statistic`` (``mean``, ``median``, ``share`` ...) of ``measure`` (on its scale) with its
    ``n`` (None where the source gives none), under ``condition``."""

    measure: str
    statistic: str
    value: float
    n: int | None
    source: Source
    condition: str
    where: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    #: For a share (``statistic`` "share giving 0", say): which decisions it counts, as a
    #: vectorised predicate on the measure's values, so a model's share can stand beside it.
    test: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass(frozen=True)
class Yardstick:
    """A game's human reference: its measures, its human samples (``load``: reads the shipped
    files when first asked, once) and its published values."""

    game: str
    measures: tuple[Measure, ...]
    load: Callable[[], Sequence[HumanSample]] = lambda: ()
    published: tuple[Published, ...] = ()

    def __post_init__(self) -> None:
        names = [m.name for m in self.measures]
        if len(set(names)) != len(names):
            raise ValueError(f"yardstick of {self.game!r}: two measures share a name ({names})")
        unknown = {p.measure for p in self.published} - set(names)
        if unknown:
            raise ValueError(f"yardstick of {self.game!r}: published values of unknown measures {sorted(unknown)}")

    @cached_property
    def samples(self) -> tuple[HumanSample, ...]:
        found = tuple(self.load())
        unknown = {s.measure for s in found} - {m.name for m in self.measures}
        if unknown:
            raise ValueError(f"yardstick of {self.game!r}: human samples of unknown measures {sorted(unknown)}")
        return found

    def measure(self, name: str) -> Measure:
        for m in self.measures:
            if m.name == name:
                return m
        raise KeyError(f"yardstick of {self.game!r} has no measure {name!r}")

    def samples_of(self, measure: str) -> list[HumanSample]:
        return [s for s in self.samples if s.measure == measure]


# ----------------------------------------------------------------------------------------------
# Reading shipped files


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows of a CSV file (``.csv`` or gzip-compressed ``.csv.gz``) as dicts of strings."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:  # type: ignore[operator]
        return list(csv.DictReader(f))


def counted(values: Iterable[float]) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Distinct values (ascending) and how often each occurs."""
    found: dict[float, int] = {}
    for v in values:
        found[float(v)] = found.get(float(v), 0) + 1
    keys = sorted(found)
    return tuple(keys), tuple(found[k] for k in keys)


# ----------------------------------------------------------------------------------------------
# The comparison


def bin_index(values: np.ndarray, lo: float, hi: float, bins: int) -> np.ndarray:
    """The bin of each value among ``bins`` equal bins over ``[lo, hi]`` (values outside are
    put in the first or last bin; ``hi`` itself in the last, as Mei et al. do)."""
    x = (np.asarray(values, dtype=float) - lo) / (hi - lo) * bins
    return np.clip(np.floor(x).astype(int), 0, bins - 1)


def bin_shares(values: np.ndarray, counts: np.ndarray | None, lo: float, hi: float, bins: int) -> np.ndarray:
    """Share of the decisions in each bin."""
    counts = np.ones(len(values)) if counts is None else np.asarray(counts, dtype=float)
    out = np.bincount(bin_index(values, lo, hi, bins), weights=counts, minlength=bins).astype(float)
    return out / out.sum()


def turing_shares(human: np.ndarray, model: np.ndarray) -> tuple[float, float, float]:
    """(win, tie, lose) of a model whose decisions fall in the bins with shares ``model``
    against people whose decisions fall in them with shares ``human`` (module doc): the model
    wins when its bin holds more of the human decisions than the human's bin."""
    p, q = np.asarray(human, dtype=float), np.asarray(model, dtype=float)
    denser = p[None, :] > p[:, None]  # [i, j]: the model's bin j denser than the human's bin i
    equal = p[None, :] == p[:, None]
    joint = p[:, None] * q[None, :]
    win, tie = float((joint * denser).sum()), float((joint * equal).sum())
    return win, tie, max(0.0, 1.0 - win - tie)


def _turing_batch(human: np.ndarray, model: np.ndarray) -> np.ndarray:
    """:func:`turing_shares` of B pairs of share vectors at once: (B, 3)."""
    p, q = human, model
    denser = p[:, None, :] > p[:, :, None]
    equal = p[:, None, :] == p[:, :, None]
    joint = p[:, :, None] * q[:, None, :]
    win = (joint * denser).sum(axis=(1, 2))
    tie = (joint * equal).sum(axis=(1, 2))
    return np.stack([win, tie, np.clip(1 - win - tie, 0, 1)], axis=1)


#: Bootstrap resamples of the Turing intervals.
TURING_REPS = 2000


@dataclass(frozen=True)
class Turing:
    """Behavioural Turing shares with 95 % percentile-bootstrap intervals (each a (low, high))."""

    win: float
    tie: float
    lose: float
    win_ci: tuple[float, float]
    tie_ci: tuple[float, float]
    lose_ci: tuple[float, float]
    likeness: float
    likeness_ci: tuple[float, float]


def turing(sample: HumanSample, values: np.ndarray, measure: Measure, clusters: np.ndarray | None = None, reps: int = TURING_REPS, seed: int = 0, level: float = 0.95) -> Turing:
    """The behavioural Turing score of the decisions ``values`` (each in cluster ``clusters``:
    a game or a participant; None: each its own) against the human ``sample``. The human data
    is the yardstick, held fixed: the intervals resample the model's clusters only. (Resampling
    the people too would rank the bins and draw the human decision from the same resampled
    histogram, which favours the human side for a small sample: decisions distributed exactly
    as Berg et al.'s 32 senders would get an interval below 0.5.)"""
    hv, hc = sample.array()
    lo, hi, bins = measure.lo, measure.hi, measure.bins
    p = bin_shares(hv, hc, lo, hi, bins)
    values = np.asarray(values, dtype=float)
    if not len(values):
        raise ValueError("no decisions to score")
    q = bin_shares(values, None, lo, hi, bins)
    win, tie, lose = turing_shares(p, q)
    rng = np.random.default_rng(seed)
    labels = np.arange(len(values)) if clusters is None else np.unique(np.asarray(clusters), return_inverse=True)[1]
    k = int(labels.max()) + 1
    per_cluster = np.zeros((k, bins))
    np.add.at(per_cluster, (labels, bin_index(values, lo, hi, bins)), 1.0)
    weights = rng.multinomial(k, np.full(k, 1.0 / k), size=reps).astype(float)
    qb = weights @ per_cluster
    qb /= np.maximum(qb.sum(axis=1, keepdims=True), 1e-300)
    return _scored(win, tie, lose, _turing_batch(np.broadcast_to(p, qb.shape), qb), level)


def _scored(win: float, tie: float, lose: float, shares: np.ndarray, level: float) -> Turing:
    """A :class:`Turing` of the point shares with percentile intervals from resampled ``shares`` (B, 3)."""
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(shares, tail, axis=0), np.percentile(shares, 100 - tail, axis=0)
    like = shares[:, 0] + shares[:, 1] / 2
    return Turing(
        win, tie, lose,
        (float(low[0]), float(high[0])), (float(low[1]), float(high[1])), (float(low[2]), float(high[2])),
        win + tie / 2, (float(np.percentile(like, tail)), float(np.percentile(like, 100 - tail))),
    )


def human_baseline(sample: HumanSample, measure: Measure, reps: int = TURING_REPS, seed: int = 0, level: float = 0.95) -> Turing:
    """The Turing score of people against people: a second draw from the same human data in
    the model's place (win and lose equal by symmetry; likeness 0.5). Its interval is what a
    model drawing as many decisions as the data holds from the people's own distribution
    would get (the model side resampled, the yardstick fixed, as in :func:`turing`)."""
    hv, hc = sample.array()
    p = bin_shares(hv, hc, measure.lo, measure.hi, measure.bins)
    win, tie, lose = turing_shares(p, p)
    rng = np.random.default_rng(seed)
    n = int(hc.sum())
    qb = rng.multinomial(n, p, size=reps).astype(float) / n
    return _scored(win, tie, lose, _turing_batch(np.broadcast_to(p, qb.shape), qb), level)


def wasserstein(sample: HumanSample, values: np.ndarray) -> float:
    """Earth mover's distance between the decisions and the human sample (in the measure's units)."""
    from scipy.stats import wasserstein_distance

    hv, hc = sample.array()
    return float(wasserstein_distance(np.asarray(values, dtype=float), hv, None, hc))


def ks_test(sample: HumanSample, values: np.ndarray) -> tuple[float, float]:
    """Two-sample Kolmogorov–Smirnov statistic D and its p-value (scipy's ``ks_2samp``, exact for
    small samples, asymptotic otherwise)."""
    from scipy.stats import ks_2samp

    hv, hc = sample.array()
    human = np.repeat(hv, hc.astype(int))
    res = ks_2samp(np.asarray(values, dtype=float), human)
    return float(res.statistic), float(res.pvalue)
