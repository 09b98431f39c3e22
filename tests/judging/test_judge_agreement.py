"""Agreement statistics with values known by hand, and beside statsmodels' where installed."""

from __future__ import annotations

import math
import random

import pytest

from agorabench.analysis.agreement import agreement, alpha_interval, cohen_kappa, code_of, krippendorff_alpha


def _pairs(table: list[list[int]], cats: str = "yn") -> tuple[list[str], list[str]]:
    a, b = [], []
    for i, row in enumerate(table):
        for j, n in enumerate(row):
            a += [cats[i]] * n
            b += [cats[j]] * n
    return a, b


def test_kappa_of_a_two_by_two_table_by_hand():
    # 20 both yes, 5 yes/no, 10 no/yes, 15 both no: p_o = 35/50 = 0.7; marginals 25/50 and 30/50,
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    a, b = _pairs([[20, 5], [10, 15]])
    k = cohen_kappa(a, b)
    assert (k.n, k.observed, k.expected) == (50, pytest.approx(0.7), pytest.approx(0.5))
    assert k.kappa == pytest.approx(0.4, abs=1e-12)
    # Fleiss-Cohen-Everitt: var = [sum p_ii (1 - (p_i. + p_.i)(1 - k))^2 + (1 - k)^2 sum_{i!=j} p_ij (p_.i + p_j.)^2 - (k - p_e (1 - k))^2] / ((1 - p_e)^2 n)
    t1 = 0.4 * (1 - (0.5 + 0.6) * 0.6) ** 2 + 0.3 * (1 - (0.5 + 0.4) * 0.6) ** 2
    t2 = 0.36 * (0.1 * (0.6 + 0.5) ** 2 + 0.2 * (0.4 + 0.5) ** 2)
    t3 = (0.4 - 0.5 * 0.6) ** 2
    se = math.sqrt((t1 + t2 - t3) / (0.25 * 50))
    assert k.se == pytest.approx(se, rel=1e-12) and k.low == pytest.approx(0.4 - 1.959963984540054 * se)


def test_perfect_and_chance_agreement():
    assert cohen_kappa(list("abcab"), list("abcab")).kappa == pytest.approx(1.0)
    assert math.isnan(cohen_kappa(list("aaa"), list("aaa")).kappa)  # one code throughout: kappa undefined
    # agreement no better than chance: p_o = p_e = 0.5
    assert cohen_kappa(list("yynn"), list("ynyn")).kappa == pytest.approx(0.0)
    with pytest.raises(ValueError):
        cohen_kappa(["a"], [])


def test_krippendorff_alpha_known_values():
    # two coders, the 2x2 table above: alpha = 1 - (n-1) D / (n^2 - sum n_c^2) = 1 - 99*30/4950 = 0.4
    a, b = _pairs([[20, 5], [10, 15]])
    assert krippendorff_alpha([[x, y] for x, y in zip(a, b)]) == pytest.approx(0.4)
    # Krippendorff's worked example (four coders, twelve units, missing codes; nominal alpha 0.743)
    rows = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[r[u] for r in rows if r[u] is not None] for u in range(12)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
    alpha, low, high = alpha_interval(units, reps=300)
    assert low <= alpha <= high


def test_agreement_over_shared_units_and_multilabel_codes():
    first = {"m1": code_of(["b", "a"]), "m2": "a", "m3": "c"}
    second = {"m1": "a|b", "m2": "a", "m4": "c"}
    got = agreement(first, second, ("judge", "human"), reps=50)
    assert got.kappa.n == 2 and got.kappa.observed == 1.0 and "judge vs human: 2 message(s)" in got.line()
    with pytest.raises(ValueError, match="no message in common"):
        agreement({"x": "a"}, {"y": "a"})


def test_kappa_beside_statsmodels():
    sm = pytest.importorskip("statsmodels.stats.inter_rater")
    import numpy as np

    rng = random.Random(7)
    for _ in range(20):
        k = rng.randint(2, 4)
        cats = "abcd"[:k]
        a = [rng.choice(cats) for _ in range(60)]
        b = [x if rng.random() < 0.6 else rng.choice(cats) for x in a]
        ours = cohen_kappa(a, b)
        present = sorted(set(a) | set(b))
        table = np.array([[sum(1 for x, y in zip(a, b) if x == r and y == c) for c in present] for r in present])
        theirs = sm.cohens_kappa(table)
        assert ours.kappa == pytest.approx(theirs.kappa, abs=1e-12)
        assert ours.se == pytest.approx(theirs.std_kappa, rel=1e-9)
        assert (ours.low, ours.high) == (pytest.approx(theirs.kappa_low, abs=1e-9), pytest.approx(theirs.kappa_upp, abs=1e-9))
