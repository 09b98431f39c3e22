"""The commons' pure rules: how a harvest larger than the stock is shared (:data:`ALLOCATIONS`),
what every agent knows of a past month, and the paper's metrics of one run
(:func:`commons_metrics`)."""

from __future__ import annotations

import math
import random
from typing import Any

from .scenario import Scenario


def allocate(requests: dict[str, int], stock: int, rng: random.Random) -> dict[str, int]:
    """Stochastic allocation: everyone gets its request if the stock covers all of them;
    otherwise units go one at a time to a uniformly random agent still short of its request
    (roles in the given order), until the stock is empty."""
    wanted = {r: max(0, int(a)) for r, a in requests.items()}
    if sum(wanted.values()) <= stock:
        return dict(wanted)
    got = {r: 0 for r in wanted}
    left = int(stock)
    while left > 0:
        open_ = [r for r in wanted if got[r] < wanted[r]]
        if not open_:
            break
        got[rng.choice(open_)] += 1
        left -= 1
    return got


def allocate_proportional(requests: dict[str, int], stock: int, rng: random.Random) -> dict[str, int]:
    """Proportional allocation: if the requests W exceed the stock h, agent i first gets
    floor(h·w_i/W); each unit still left goes to a different agent that was rounded down,
    drawn with probability proportional to its request (the original's proportional mode)."""
    wanted = {r: max(0, int(a)) for r, a in requests.items()}
    total = sum(wanted.values())
    if total <= stock:
        return dict(wanted)
    got = {r: (int(stock) * w) // total for r, w in wanted.items()}
    left = int(stock) - sum(got.values())
    short = [r for r in wanted if got[r] < wanted[r] and int(stock) * wanted[r] % total]
    while left > 0 and short:
        r = rng.choices(short, weights=[wanted[x] for x in short])[0]
        got[r] += 1
        short.remove(r)
        left -= 1
    return got


ALLOCATIONS = {"stochastic": allocate, "proportional": allocate_proportional}


def most_removable(scenario: Scenario, horizon: int) -> float:
    """M: the most a group can remove over T months, by clearing everything every month:
    initial + (T − 1)·min(a, capacity) for ``add`` growth (trash: 100 + 11·50 = 650)."""
    if scenario.growth_kind == "add":
        return scenario.initial + (horizon - 1) * min(scenario.growth_value, scenario.capacity)
    return scenario.initial + (horizon - 1) * scenario.capacity * (1 - 1 / scenario.growth_value)


def commons_metrics(
    months: list[dict[str, Any]],
    roles: list[str],
    scenario: Scenario,
    horizon: int,
    collapse_rule: str = "strict",
    over_usage_threshold: str = "per_agent",
) -> dict[str, float]:
    """Per-run metrics from the monthly records (``stock_before``, ``stock_after``,
    ``collected`` per role present that month, optionally ``requested``), N = len(roles),
    T = ``horizon``, f0 = f(initial stock):

    - survival_time m = the month whose harvest collapsed the resource (1-based), else the
      number of months played (T for a full run).
    - survival_time_harvested: the same count over only the months in which some agent asked for
      more than 0 (the counting of the reproduction's Tables 1 and 2; GovSim turns an unusable
      answer into 0, so all-zero months are skipped there).
    - censored = 1 if the run stopped before T without a collapse (an imported log that was cut
      off): survived is then undefined (NaN, stored as null) and m is a lower bound; else 0.
    - survived = 1 if m = T and no collapse, 0 on collapse; survival rate over runs = 100·mean
      over the runs that are not censored.
    - total gain per agent R_i = Σ_t r_i(t) (collected amounts); ``total_gain`` is the mean
      over agents, ``total_gain_sum`` = ΣR = Σ_i R_i.
    - efficiency = 100·(1 − max(0, T·f0 − ΣR)/(T·f0)).
    - Inverse scenario (Table 5): r_i(t) is the amount removed; ``total_loss`` = (M − ΣR)/N with
      M = :func:`most_removable` (130 − mean removed per agent for trash: 0 when a group clears
      everything, 130 when it removes nothing); efficiency = 100·ΣR/(T·f0) while ΣR ≤ T·f0 and
      100·T·f0/ΣR once a group removes more (600/650 = 92.3 for clearing everything); 0 when
      nothing is removed.
    - equality = 100·(1 − Σ_i Σ_j |R_i − R_j| / (2·N²·R̄)), R̄ = mean R_i (100 × (1 − Gini));
      undefined (None) when ΣR = 0, as the original's Gini;
      0 when ΣR = 0.
    - over_usage = 100·#{(i, t): r_i(t) > f(t)/n_t} / #{(i, t): t ≤ m} over the agents present
      in the months played (``group`` variant: r_i(t) > f(t)); 100 when no month was played.
      Inverse scenario: an agent over-uses the commons when it removes *less* than f(t)/n_t.
    - invalid_harvests, invalid_remarks: the harvest answers and chat remarks that stayed unusable
      after the re-asks (the fallback applied: nothing taken, an empty remark and the chat goes
      on); NaN for records that do not say (imported logs).
    """
    n = len(roles)
    gains = {r: 0.0 for r in roles}
    played = harvested = 0
    collapsed_at = None
    over = considered = 0
    for i, m in enumerate(months, start=1):
        played = i
        present = list(m["collected"])
        asked = m.get("requested") or m["collected"]
        if any(float(v or 0) > 0 for v in asked.values()):
            harvested += 1
        f = scenario.sustainable_total(m["stock_before"])
        share = f / len(present) if over_usage_threshold == "per_agent" else f
        for r in present:
            c = float(m["collected"].get(r, 0) or 0)
            gains[r] = gains.get(r, 0.0) + c
            considered += 1
            if (c < share) if scenario.inverse else (c > share):
                over += 1
        if scenario.collapsed(m["stock_after"], collapse_rule):
            collapsed_at = i
            break
    survival_time = collapsed_at if collapsed_at is not None else played
    censored = collapsed_at is None and played < horizon
    total = sum(gains.values())
    tf0 = horizon * scenario.sustainable_total(scenario.initial)
    if scenario.inverse:
        efficiency = 0.0 if total <= 0 else 100.0 * (total / tf0 if total <= tf0 else tf0 / total)
    else:
        efficiency = 100.0 * (1 - max(0.0, tf0 - total) / tf0)
    if total > 0:
        mean = total / n
        diffs = sum(abs(gains[a] - gains[b]) for a in roles for b in roles)
        equality = 100.0 * (1 - diffs / (2 * n * n * mean))
    else:  # undefined when nobody took anything: the original's Gini divides by the total (0/0)
        equality = None
    out = {
        "survival_time": float(survival_time),
        "survival_time_harvested": float(harvested),
        "censored": 1.0 if censored else 0.0,
        "survived": math.nan if censored else (1.0 if collapsed_at is None else 0.0),
        "total_gain": total / n,
        "total_gain_sum": total,
        "efficiency": efficiency,
        "equality": equality,
        "over_usage": 100.0 * over / considered if considered else 100.0,
    }
    if scenario.inverse:
        out["total_loss"] = (most_removable(scenario, horizon) - total) / n
    said = [s for m in months for s in m.get("discussion") or [] if "valid" in s]
    out["invalid_harvests"] = float(sum(not v for m in months for v in (m.get("valid") or {}).values())) if any("valid" in m for m in months) else math.nan
    out["invalid_remarks"] = float(sum(not s["valid"] for s in said)) if said or any("valid" in m for m in months) else math.nan
    return out


def public(record: dict[str, Any]) -> dict[str, Any]:
    """What every agent knows about a past month (the manager's report and the chat)."""
    return {k: record.get(k) for k in ("month", "stock_before", "sustainable_total", "collected", "stock_after", "agreed_limit", "discussion")}


def last_proposal(history: list[dict[str, Any]]) -> int | None:
    """The latest per-person limit proposed in any month's chat (None if none was)."""
    for record in reversed(history):
        for m in reversed(record.get("discussion") or []):
            if m.get("proposed_limit") is not None:
                return m["proposed_limit"]
    return None
