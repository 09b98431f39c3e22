"""Agreement between two coders of the same messages (an LLM judge and a person, or two judges):
Cohen's κ with its large-sample standard error (Fleiss, Cohen and Everitt 1969, as statsmodels'
``cohens_kappa`` computes it) and a normal interval, and Krippendorff's α for nominal codes with
a percentile bootstrap interval over the coded units.

Codes are strings; a multi-label code is its sorted labels joined by ``|`` (exact agreement on
the set). Only units both coders coded count for κ; α takes every unit with two or more codes.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Hashable, Sequence

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Kappa:
    """Cohen's κ of ``n`` paired codes: observed and chance agreement, κ, its standard error and
    95 % interval."""

    n: int
    observed: float
    expected: float
    kappa: float
    se: float
    low: float
    high: float


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> Kappa:
    """κ = (p_o − p_e) / (1 − p_e) of two coders' codes of the same units (same order). The
    standard error is the asymptotic one without the null hypothesis (statsmodels' ``std_kappa``);
    κ is nan when chance agreement is 1 (both coders used one and the same code throughout)."""
    if len(a) != len(b):
        raise ValueError("the two coders must code the same units")
    n = len(a)
    if n == 0:
        raise ValueError("no unit coded by both coders")
    cats = sorted(set(a) | set(b), key=repr)
    at = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    table = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b):
        table[at[x]][at[y]] += 1
    p = [[v / n for v in row] for row in table]
    rows = [sum(r) for r in p]
    cols = [sum(p[i][j] for i in range(k)) for j in range(k)]
    po = sum(p[i][i] for i in range(k))
    pe = sum(rows[i] * cols[i] for i in range(k))
    if pe >= 1.0:
        return Kappa(n, po, pe, math.nan, math.nan, math.nan, math.nan)
    kappa = (po - pe) / (1 - pe)
    # Fleiss, Cohen & Everitt (1969): variance of kappa, not under the null
    term1 = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(k))
    term2 = (1 - kappa) ** 2 * sum(p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(k) for j in range(k) if i != j)
    term3 = (kappa - pe * (1 - kappa)) ** 2
    var = max(term1 + term2 - term3, 0.0) / ((1 - pe) ** 2 * n)
    se = math.sqrt(var)
    return Kappa(n, po, pe, kappa, se, kappa - Z95 * se, kappa + Z95 * se)


def krippendorff_alpha(units: Sequence[Sequence[Hashable]]) -> float:
    """Krippendorff's α for nominal codes: 1 − D_o / D_e over the coincidence matrix of the
    units' pairable codes (each unit's codes, missing ones left out; units with fewer than two
    codes add nothing). nan when every pairable code is the same (no disagreement expected)."""
    coincide: Counter[tuple[Hashable, Hashable]] = Counter()
    for codes in units:
        m = len(codes)
        if m < 2:
            continue
        for i in range(m):
            for j in range(m):
                if i != j:
                    coincide[(codes[i], codes[j])] += 1.0 / (m - 1)
    totals: Counter[Hashable] = Counter()
    for (c, _), v in coincide.items():
        totals[c] += v
    n = sum(totals.values())
    if n <= 1:
        return math.nan
    disagree = sum(v for (c, d), v in coincide.items() if c != d)
    expected = (n * n - sum(v * v for v in totals.values())) / (n - 1)
    if expected <= 0:
        return math.nan
    return 1.0 - disagree / expected


def alpha_interval(units: Sequence[Sequence[Hashable]], reps: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """α with a 95 % percentile bootstrap interval (units resampled with replacement; nan
    replicates, where a resample holds one code only, are left out)."""
    alpha = krippendorff_alpha(units)
    pairable = [u for u in units if len(u) >= 2]
    if not pairable:
        return alpha, math.nan, math.nan
    rng = random.Random(seed)
    draws = sorted(x for x in (krippendorff_alpha([pairable[rng.randrange(len(pairable))] for _ in pairable]) for _ in range(reps)) if not math.isnan(x))
    if not draws:
        return alpha, math.nan, math.nan
    return alpha, draws[int(0.025 * (len(draws) - 1))], draws[int(math.ceil(0.975 * (len(draws) - 1)))]


@dataclass(frozen=True)
class Agreement:
    """Two coders over the units both coded: κ (with interval) and α (with interval)."""

    first: str
    second: str
    kappa: Kappa
    alpha: float
    alpha_low: float
    alpha_high: float

    def line(self) -> str:
        k = self.kappa
        return (
            f"{self.first} vs {self.second}: {k.n} message(s), agreement {k.observed:.1%}, Cohen's kappa {k.kappa:.3f} [{k.low:.3f}, {k.high:.3f}], "
            f"Krippendorff's alpha {self.alpha:.3f} [{self.alpha_low:.3f}, {self.alpha_high:.3f}]"
        )


def agreement(first: dict[str, Hashable], second: dict[str, Hashable], names: tuple[str, str] = ("first", "second"), reps: int = 1000, seed: int = 0) -> Agreement:
    """Agreement of two codings (unit id -> code) over the units both coded."""
    shared = sorted(set(first) & set(second))
    if not shared:
        raise ValueError(f"{names[0]} and {names[1]} coded no message in common")
    a, b = [first[u] for u in shared], [second[u] for u in shared]
    alpha, lo, hi = alpha_interval([[x, y] for x, y in zip(a, b)], reps=reps, seed=seed)
    return Agreement(names[0], names[1], cohen_kappa(a, b), alpha, lo, hi)


def code_of(labels: Sequence[str]) -> str:
    """A coder's labels of one unit as one nominal code (sorted, joined by ``|``)."""
    return "|".join(sorted(labels))
