"""Beauty contest: the p-beauty contest (guessing game) of Nagel (1995, "Unraveling in guessing
games: an experimental study", American Economic Review 85(5):1313–1326). Defaults are hers:
p = 2/3, numbers from 0 to 100, four rounds with the same group, a prize of 20 points a round
(her prize was 20 DM); the group is smaller (5 players; her sessions had 15–18).

Rules. ``players`` N (2–20) play ``rounds`` T (1–20) rounds in one fixed group. Each round every
player chooses, at the same time as the others and without seeing their choices of that round, a
number x_i from ``low`` to ``high`` (inclusive) with at most two decimals (JSON
``{"guess": 33.25}``; Nagel allowed any real number in [0, 100]). The round's target is

    target = p · (x_1 + … + x_N) / N,

and the player(s) whose number is closest to it, |x_i − target| smallest, win the round's
``prize``, split equally among them; everybody else gets 0. Distances within 1e-9 of each other
count as equal (floating-point noise: two decimals and a p such as 2/3 never put two different
distances that close).

Feedback. After each round but the last every player is told what Nagel's subjects were shown
(her p. 1315–1316: all chosen numbers, anonymously, with their mean and p times the mean on the
blackboard; the number closest to the target and the payoffs announced): all numbers of the
round, without names, in increasing order; their average; the target; the winning number(s) and
how many won; and the player's own number and points. The last round's result is left to the
results page.

Bad answers (not a number, outside the range, more than two decimals) are re-asked with the
error; a number that stays invalid becomes the midpoint (low + high) / 2, which then counts in
the average and can win like any other choice, and the turn is recorded invalid.

Noted per turn (``table.note_metrics``): on every valid choice ``guess`` (the number) and
``round``; on every player's turn of a round, valid or not, ``points_share`` = the points it won
that round / prize. (The configuration's ``p``, ``low`` and ``high`` are turns-frame columns.)

Equilibrium. With p < 1 everyone choosing ``low`` is the only Nash equilibrium (iterated
elimination of dominated choices drives every number there); with p > 1 everyone choosing
``high`` is the equilibrium that the same reasoning reaches (with low = 0 everyone at 0 is one
too: a target of 0 that nobody can approach alone). With p = 1 every profile of equal numbers is
an equilibrium, and no number is singled out. :func:`equilibrium` gives low, high, or NaN for
p = 1.

Metrics, over the game's valid choices (NaN where a mean has nothing to average):

- mean_guess_first / mean_guess_last = mean of the valid choices of round 1 / of round T;
- target_first / target_last = the target of round 1 / of round T (p times the mean of all
  choices of the round, fallbacks included: the target that decided the round);
- equilibrium_distance_first / _last = mean of |x − equilibrium| over the valid choices of
  round 1 / of round T, in the numbers' units (NaN when p = 1);
- convergence = mean_guess_last / mean_guess_first (below 1: the choices fell; Nagel's rate of
  decrease of the mean is 1 − convergence; NaN when mean_guess_first is 0 or NaN);
- winners_share = mean over rounds of (number of winners) / N: 1 / N when one player wins
  each round, 1 when all tie (as when all choose the same number);
- top_points_share = the most points any one player won / (prize · T), the points all rounds
  paid: 1 when one player won every round.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import create_model, Field, field_validator, model_validator

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.table import Prompt, Table

#: The phase of every choice (the turns the human yardstick reads).
GUESS = "guess"
#: Distances closer than this count as a tie (module doc).
TIE = 1e-9


def _ratio(value: Any) -> Any:
    """A ratio written as text, "2/3", as the float it names; anything else as it is."""
    if isinstance(value, str) and "/" in value:
        top, _, bottom = value.partition("/")
        try:
            return float(Fraction(top.strip()) / Fraction(bottom.strip()))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"p: {value!r} is not a ratio of two numbers") from None
    return value


class BeautyContestConfig(GameConfig):
    """``players`` N (2–20); ``p`` the factor of the average (> 0; a study may write it as the
    text "2/3", stored as the float 2/3); numbers from ``low`` to ``high`` (whole numbers,
    low < high); ``rounds`` T (1–20); ``prize`` the points the round's winners share."""

    players: int = Field(5, ge=2, le=20)
    p: float = Field(2 / 3, gt=0, le=100)
    low: int = Field(0, ge=-1_000_000, le=1_000_000)
    high: int = Field(100, ge=-1_000_000, le=1_000_000)
    rounds: int = Field(4, ge=1, le=20)
    prize: float = Field(20.0, gt=0, le=1_000_000)

    @field_validator("p", mode="before")
    @classmethod
    def _fraction(cls, v: Any) -> Any:
        return _ratio(v)

    @model_validator(mode="after")
    def _range(self) -> "BeautyContestConfig":
        if self.low >= self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        return self


def role_names(players: int) -> tuple[str, ...]:
    """The seats: ``player_1`` … ``player_N``."""
    return tuple(f"player_{i}" for i in range(1, players + 1))


def label(role: str) -> str:
    """How a seat is named in prompts: ``player_2`` → "Player 2"."""
    return role.replace("_", " ").capitalize()


def number(x: float) -> str:
    """A number as players read it: at most two decimals, no trailing zeros (33.0 → "33",
    24.4888… → "24.49")."""
    text = f"{round(x, 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def ratio_text(p: float) -> str:
    """p as players read it: a short decimal when it is one (0.5 → "0.5"), else a fraction with
    a small denominator when it is exactly one (2/3 → "2/3"), else six significant digits."""
    short = f"{p:.4g}"
    if float(short) == p:
        return short
    frac = Fraction(p).limit_denominator(1000)
    if float(frac) == p:
        return f"{frac.numerator}/{frac.denominator}"
    return f"{p:.6g}"


def listing(values: list[str]) -> str:
    """Words as a list: "12, 5 and 0"."""
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def equilibrium(p: float, low: float, high: float) -> float:
    """The equilibrium number (module doc): ``low`` for p < 1, ``high`` for p > 1, NaN for p = 1."""
    if p < 1:
        return float(low)
    if p > 1:
        return float(high)
    return math.nan


def midpoint(low: float, high: float) -> float:
    """(low + high) / 2, the fallback choice, to two decimals."""
    return round((low + high) / 2, 2)


class Guess(Action):
    """A player's number, with at most two decimals; :func:`guess_type` bounds it by the range."""

    response_format: ClassVar = "json"

    guess: float = Field(description="a number with at most two decimals")

    @field_validator("guess")
    @classmethod
    def _two_decimals(cls, v: float) -> float:
        scaled = v * 100
        if abs(scaled - round(scaled)) > 1e-6 * max(1.0, abs(scaled)):
            raise ValueError(f"at most two decimals are allowed (such as 33.25), not {v!r}")
        return round(v, 2) + 0.0

    @classmethod
    def format_instructions(cls) -> str:
        hint = cls.model_fields["guess"].description
        return 'Answer with a JSON object of this form:\n{"guess": <' + str(hint) + ">}"

    @classmethod
    def form_note(cls) -> str:
        info = cls.model_fields["guess"]
        lo = next((m.ge for m in info.metadata if getattr(m, "ge", None) is not None), None)
        hi = next((m.le for m in info.metadata if getattr(m, "le", None) is not None), None)
        span = f" from {number(lo)} to {number(hi)}" if lo is not None and hi is not None else ""
        return f"Enter a number{span}: a whole number or one with up to two decimals, such as 33.25."


@lru_cache(maxsize=None)
def guess_type(low: int, high: int) -> type[Guess]:
    """The choice of a game with numbers from ``low`` to ``high``: low ≤ guess ≤ high, two decimals at most."""
    field = (float, Field(ge=low, le=high, description=f"a number from {low} to {high}, with at most two decimals"))
    name = f"Guess_{low}_{high}".replace("-", "m")
    return create_model(name, __base__=Guess, __module__=__name__, guess=field)


def target(p: float, choices: list[float]) -> float:
    """p · mean(choices)."""
    return p * sum(choices) / len(choices)


def winners(choices: list[float], goal: float) -> list[int]:
    """The indices of the choices closest to ``goal`` (distances within :data:`TIE` tie)."""
    distance = [abs(x - goal) for x in choices]
    best = min(distance)
    return [i for i, d in enumerate(distance) if d - best <= TIE]


def _tidy(x: float) -> float:
    """A value rounded to 9 decimals (so 20 / 3 is stored as 6.666666667 and sums stay exact
    enough to read)."""
    return round(x, 9) + 0.0


class BeautyContest(Game):
    name = "beauty_contest"
    Config = BeautyContestConfig
    prompt_dir = Path(__file__).parent / "prompts"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return role_names(config.players)  # type: ignore[attr-defined]

    def _rules(self) -> dict[str, Any]:
        c = self.config
        return {"players": c.players, "rounds": c.rounds, "p": ratio_text(c.p), "low": c.low, "high": c.high, "prize": number(c.prize)}

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        roles = self.roles(c)
        rules = self._rules()
        for role in roles:
            table.set_system(role, self.text(role).render("system", me=label(role), **rules))
        kind = guess_type(c.low, c.high)
        fallback = kind(guess=midpoint(c.low, c.high))
        seen: dict[str, list[dict[str, Any]]] = {role: [] for role in roles}
        history: list[dict[str, Any]] = []
        for r in range(1, c.rounds + 1):
            asks = {}
            for role in roles:
                fmt = kind.format_instructions()
                text = self.text(role).render("guess", round=r, format=fmt, **rules)
                obs = {
                    "role": role, "round": r, "rounds": c.rounds, "players": c.players, "p": c.p, "low": c.low, "high": c.high,
                    "prize": c.prize, "history": [dict(h) for h in seen[role]],
                }
                asks[role] = (Prompt(text, obs, phase=GUESS, instructions=fmt), kind, fallback)
            answers = await table.ask_each(asks)
            choices = [float(answers[role].guess) for role in roles]  # type: ignore[union-attr]
            valid = [table.last_valid(role) for role in roles]
            goal = target(c.p, choices)
            won = winners(choices, goal)
            share = c.prize / len(won)
            points = [_tidy(share) if i in won else 0.0 for i in range(len(roles))]
            for i, role in enumerate(roles):
                if valid[i]:
                    table.note_metrics(role, {"guess": choices[i], "round": r})
                table.note_metrics(role, {"points_share": points[i] / c.prize})
            mean = sum(choices) / len(choices)
            history.append({
                "round": r, "guesses": choices, "valid": valid, "mean": _tidy(mean), "target": _tidy(goal),
                "winners": [roles[i] for i in won], "points": points,
            })
            ordered = sorted(choices)
            winning = sorted({choices[i] for i in won})
            for i, role in enumerate(roles):
                seen[role].append({
                    "round": r, "choices": ordered, "mean": _tidy(mean), "target": _tidy(goal), "winning": winning,
                    "winners": len(won), "own": choices[i], "points": points[i],
                })
                if r < c.rounds:
                    table.tell(role, self.text(role).render(
                        "result", round=r, choices=listing([number(x) for x in ordered]), mean=number(mean), target=number(goal),
                        winning=listing([number(x) for x in winning]), numbers=len(winning), winners=len(won), own=number(choices[i]),
                        won=i in won, points=number(points[i]), **rules,
                    ))
        return {
            "players": c.players, "p": c.p, "low": c.low, "high": c.high, "rounds": c.rounds, "prize": c.prize,
            "roles": list(roles), "history": history,
            "earnings": {role: _tidy(sum(h["points"][i] for h in history)) for i, role in enumerate(roles)},
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """The rules in one sentence, each round as the player saw it, then its points beside
        those of the group's average player."""
        roles = outcome.get("roles", [])
        if role not in roles:
            return ["The game is over."]
        i, n, rounds = roles.index(role), len(roles), outcome["rounds"]
        p = ratio_text(outcome["p"])
        lines = [
            f"You played {rounds} round{'s' if rounds != 1 else ''} in a group of {n}; each round everyone chose a number from {outcome['low']} to {outcome['high']}, "
            f"and the number closest to {p} times the average won {number(outcome['prize'])} points."
        ]
        for h in outcome.get("history", []):
            won = [roles.index(w) for w in h["winners"]]
            winning = sorted({h["guesses"][j] for j in won})
            line = f"Round {h['round']}: you chose {number(h['guesses'][i])}; the average was {number(h['mean'])} and the target {number(h['target'])}; "
            if i in won and len(won) == 1:
                line += f"yours was the winning number and you won {number(h['points'][i])} points."
            elif i in won:
                others = len(won) - 1
                line += f"you shared the prize with {others} other player{'s' if others > 1 else ''} as close as you and won {number(h['points'][i])} points."
            else:
                line += f"the winning number{'s were' if len(winning) > 1 else ' was'} {listing([number(x) for x in winning])}, and you won nothing this round."
            lines.append(line)
        earnings = outcome.get("earnings", {})
        mean = sum(earnings.values()) / len(earnings) if earnings else 0.0
        lines.append(f"In all you won {number(earnings.get(role, 0.0))} points; the average player in your group won {number(mean)}.")
        return lines

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """Every player chooses once a round."""
        return config.rounds * config.players  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """Choices from low to high, targets p times that, distances up to high − low, the
        shares 0–1; the convergence ratio is open."""
        c = config
        lo, hi = float(c.low), float(c.high)  # type: ignore[attr-defined]
        target = (min(c.p * lo, c.p * hi), max(c.p * lo, c.p * hi))  # type: ignore[attr-defined]
        return {
            "mean_guess_first": (lo, hi), "mean_guess_last": (lo, hi), "target_first": target, "target_last": target,
            "equilibrium_distance_first": (0.0, hi - lo), "equilibrium_distance_last": (0.0, hi - lo),
            "convergence": (None, None), "winners_share": (0.0, 1.0), "top_points_share": (0.0, 1.0),
        }

    @classmethod
    def seat_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """The ranges of the per-seat measures a report derives from the turns (not game
        metrics, so not in :meth:`metric_ranges`, which the conformance suite holds every
        played metric to): ``points_share``, the noted points a seat won in a round / the prize,
        and ``at_equilibrium``, the share of a seat's valid numbers at the equilibrium; both
        0–1. Declared here, beside the game's other facts, so that no report writes them."""
        return {"at_equilibrium": (0.0, 1.0), "points_share": (0.0, 1.0)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """mean_guess_first/_last, target_first/_last, equilibrium_distance_first/_last,
        convergence, winners_share, top_points_share (module doc)."""
        history = outcome["history"]
        n, rounds, prize = outcome["players"], outcome["rounds"], outcome["prize"]
        goal = equilibrium(outcome["p"], outcome["low"], outcome["high"])

        def valid(h: dict[str, Any]) -> list[float]:
            return [x for x, ok in zip(h["guesses"], h["valid"]) if ok]

        def mean(values: list[float]) -> float:
            return sum(values) / len(values) if values else math.nan

        first, last = history[0], history[-1]
        mean_first, mean_last = mean(valid(first)), mean(valid(last))
        earnings = outcome["earnings"]
        return {
            "mean_guess_first": mean_first,
            "mean_guess_last": mean_last,
            "target_first": first["target"],
            "target_last": last["target"],
            "equilibrium_distance_first": mean([abs(x - goal) for x in valid(first)]),
            "equilibrium_distance_last": mean([abs(x - goal) for x in valid(last)]),
            "convergence": mean_last / mean_first if mean_first and not math.isnan(mean_first) else math.nan,
            "winners_share": sum(len(h["winners"]) for h in history) / (len(history) * n),
            "top_points_share": max(earnings.values()) / (prize * rounds),
        }
