"""Prisoner's dilemma: two players choose at the same time to cooperate or to defect, for one
round, a known number of rounds, or a number of rounds that ends at random.

Payoffs (whole points, data of the configuration). Per round, with the two choices:

- both cooperate: each gets ``reward`` R;
- both defect: each gets ``punishment`` P;
- one defects, the other cooperates: the defector gets ``temptation`` T, the cooperator
  ``sucker`` S.

The configuration requires T > R > P > S ≥ 0, which makes defecting strictly dominant in every
round while mutual defection pays both less than mutual cooperation, and also 2R > T + S, the
usual condition of the repeated game: without it two players who take turns exploiting each
other (one round C/D, the next D/C: (T + S) / 2 a round each) would do at least as well as
steady mutual cooperation, and mutual cooperation would not be the round's joint best. The
defaults are the points of Shafir & Tversky (1992), "Thinking through uncertainty:
nonconsequential reasoning and choice", Cognitive Psychology 24:449–474, Fig. 2 (p. 452): R 75,
T 85, S 25, P 30 (85 > 75 > 30 > 25; 150 > 110). That figure is their "typical" matrix: the six
matrices their Experiment 1 used are not all printed.

Horizon (``horizon``):

- ``one-shot`` (default): one round;
- ``known``: ``rounds`` rounds (1–100), the number told to both players;
- ``random``: after each round the game goes on with probability ``continue_prob`` (drawn from
  ``table.rng``, nature's stream, so a seed gives the same lengths whoever plays), and ends at
  ``max_rounds`` at the latest so that every game ends. Players are told the probability, never
  the cap, and never in advance which round is the last.

``rounds`` is read only under ``known``, ``continue_prob`` and ``max_rounds`` only under
``random``.

Choices. Each round both players are asked at once (``table.ask_each``): neither question nor
observation holds the other's choice of that round. The answer is one of two words, the labels
``cooperate_label`` and ``defect_label`` (default "cooperate" and "defect"; Shafir & Tversky's
subjects chose between "cooperate" and "compete"), in JSON: ``{"choice": "cooperate"}``. A
label is one word of letters (hyphens allowed inside), the two different ignoring case; answers
are matched ignoring case and a trailing full stop. An answer that stays invalid after the
re-asks becomes the defect label (the dominant choice; no cooperation without a clear answer)
and the turn is recorded invalid. After each round that is followed by another, both players
learn both choices and both players' points.

Noted for every valid decision (``table.note_metrics``): ``cooperate`` (1.0 cooperate, 0.0
defect) and ``round``.

Metrics, over the N rounds played (a share with nothing to average is NaN):

- cooperation          = cooperating decisions / valid decisions, both players, every round
  (NaN when no decision was valid);
- cooperation_first    = the same over round 1 (NaN when neither round-1 decision was valid);
- cooperation_player_1, cooperation_player_2 = the same for one seat;
- mutual_cooperation   = rounds in which both cooperated / N (a fallback counts as the defection
  it became: it is what was played);
- payoff_player_1, payoff_player_2 = the seat's points / (T·N), a share of the most a player can
  earn in N rounds (defecting against a cooperator every round); mutual cooperation gives R / T
  (75 / 85 = 0.882 with the defaults), mutual defection P / T (0.353);
- efficiency           = both players' points / (2R·N), a share of the most the pair can earn
  (2R is the largest round total because 2R > T + S and R > P);
- rounds_played        = N.
"""

from __future__ import annotations

import math
import re
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import create_model, Field, field_validator, model_validator

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.table import Prompt, Table

PLAYER_1, PLAYER_2 = "player_1", "player_2"
ROLES = (PLAYER_1, PLAYER_2)
#: The phase of every decision (the turns the human yardstick reads).
CHOOSE = "choose"
#: The horizons.
ONE_SHOT, KNOWN, RANDOM = "one-shot", "known", "random"
#: The two choices as the outcome and the observations name them, whatever the labels.
COOPERATE, DEFECT = "cooperate", "defect"
#: What a label may be: one word of letters, hyphens allowed inside, at most 24 characters.
LABEL = re.compile(r"[A-Za-z](?:[A-Za-z-]{0,22}[A-Za-z])?")


class PrisonersDilemmaConfig(GameConfig):
    """Points per round ``reward`` R (both cooperate), ``temptation`` T (defect against a
    cooperator), ``sucker`` S (cooperate against a defector), ``punishment`` P (both defect),
    whole numbers with T > R > P > S ≥ 0 and 2R > T + S; ``horizon`` (module doc) with
    ``rounds`` (known), ``continue_prob`` and ``max_rounds`` (random); the two choices' words
    ``cooperate_label`` and ``defect_label``."""

    reward: int = Field(75, ge=0, le=1_000_000)
    temptation: int = Field(85, ge=0, le=1_000_000)
    sucker: int = Field(25, ge=0, le=1_000_000)
    punishment: int = Field(30, ge=0, le=1_000_000)
    horizon: Literal["one-shot", "known", "random"] = ONE_SHOT
    rounds: int = Field(10, ge=1, le=100)
    continue_prob: float = Field(0.8, gt=0, lt=1)
    max_rounds: int = Field(20, ge=1, le=100)
    cooperate_label: str = COOPERATE
    defect_label: str = DEFECT

    @field_validator("cooperate_label", "defect_label")
    @classmethod
    def _one_word(cls, v: str) -> str:
        if not LABEL.fullmatch(v):
            raise ValueError(f"a choice's label must be one word of letters (hyphens allowed inside, at most 24 characters), not {v!r}")
        return v

    @model_validator(mode="after")
    def _dilemma(self) -> "PrisonersDilemmaConfig":
        t, r, p, s = self.temptation, self.reward, self.punishment, self.sucker
        if not t > r > p > s:
            raise ValueError(f"the payoffs must satisfy temptation > reward > punishment > sucker, not T={t}, R={r}, P={p}, S={s}")
        if not 2 * r > t + s:
            raise ValueError(f"2 × reward must exceed temptation + sucker (mutual cooperation must pay more than taking turns exploiting each other), not 2×{r} = {2 * r} ≤ {t} + {s} = {t + s}")
        if self.cooperate_label.lower() == self.defect_label.lower():
            raise ValueError(f"the two choices need different labels, not {self.cooperate_label!r} twice")
        return self


class Choice(Action):
    """A round's choice: one of the two labels; :func:`choice_type` makes the type of a label
    pair (the field's ``Literal`` holds cooperate's label first)."""

    response_format: ClassVar = "json"

    choice: str = Field(description="your choice")

    @classmethod
    def words(cls) -> tuple[str, str]:
        """(cooperate's label, defect's label)."""
        found = typing.get_args(cls.model_fields["choice"].annotation)
        return (found[0], found[1]) if len(found) == 2 else (COOPERATE, DEFECT)

    @field_validator("choice", mode="before")
    @classmethod
    def _label(cls, v: Any) -> Any:
        """The label an answer names, ignoring case, spaces, quotes and a final full stop."""
        if not isinstance(v, str):
            return v
        said = v.strip().strip(".!\"'").strip().lower()
        return next((w for w in cls.words() if w.lower() == said), v)

    @classmethod
    def format_instructions(cls) -> str:
        c, d = cls.words()
        return f'Answer with a JSON object of this form:\n{{"choice": "{c}"}} or {{"choice": "{d}"}}'

    @classmethod
    def of(cls, cooperate: bool) -> "Choice":
        """The choice to cooperate (True) or to defect (False), in this type's labels."""
        return cls(choice=cls.words()[0 if cooperate else 1])

    def cooperates(self) -> bool:
        return self.choice == self.words()[0]


@lru_cache(maxsize=None)
def choice_type(cooperate_label: str = COOPERATE, defect_label: str = DEFECT) -> type[Choice]:
    """The choice action of a game whose choices are called ``cooperate_label`` and
    ``defect_label``."""
    field = (Literal[cooperate_label, defect_label], Field(description="your choice"))  # type: ignore[valid-type]
    name = "Choice_" + re.sub(r"\W", "_", f"{cooperate_label}_{defect_label}")
    return create_model(name, __base__=Choice, __module__=__name__, choice=field)


def round_points(c: PrisonersDilemmaConfig, first: bool, second: bool) -> tuple[int, int]:
    """(player 1's, player 2's) points of a round in which each cooperates (True) or defects."""
    table = {
        (True, True): (c.reward, c.reward),
        (True, False): (c.sucker, c.temptation),
        (False, True): (c.temptation, c.sucker),
        (False, False): (c.punishment, c.punishment),
    }
    return table[first, second]


def percent(p: float) -> str:
    """A probability as a percentage without rounding it away: 0.8 → "80%", 0.125 → "12.5%"."""
    return f"{p * 100:.10g}%"


def _share(hits: list[bool]) -> float:
    return sum(hits) / len(hits) if hits else math.nan


class PrisonersDilemma(Game):
    name = "prisoners_dilemma"
    Config = PrisonersDilemmaConfig
    prompt_dir = Path(__file__).parent / "prompts"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return ROLES

    def _rules(self) -> dict[str, Any]:
        c = self.config
        return {
            "reward": c.reward, "temptation": c.temptation, "sucker": c.sucker, "punishment": c.punishment,
            "horizon": c.horizon, "rounds": c.rounds, "chance": percent(c.continue_prob),
            "c": c.cooperate_label, "d": c.defect_label,
        }

    def _goes_on(self, table: Table, r: int) -> bool:
        """Whether round ``r`` is followed by another: never after a one-shot round; under a
        known horizon until ``rounds``; under a random one a draw from ``table.rng`` below
        ``continue_prob``, and never after ``max_rounds`` (no draw is made there)."""
        c = self.config
        if c.horizon == ONE_SHOT:
            return False
        if c.horizon == KNOWN:
            return r < c.rounds
        return r < c.max_rounds and table.rng.random() < c.continue_prob

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        rules = self._rules()
        for role in ROLES:
            table.set_system(role, self.text(role).render("system", **rules))
        kind = choice_type(c.cooperate_label, c.defect_label)
        payoffs = {"reward": c.reward, "temptation": c.temptation, "sucker": c.sucker, "punishment": c.punishment}
        seen: dict[str, list[dict[str, Any]]] = {role: [] for role in ROLES}
        history: list[dict[str, Any]] = []
        r = 0
        while True:
            r += 1
            fmt = kind.format_instructions()
            asks = {}
            for role in ROLES:
                text = self.text(role).render("choose", round=r, format=fmt, **rules)
                obs = {
                    "role": role, "round": r, "horizon": c.horizon, "rounds": c.rounds if c.horizon == KNOWN else (1 if c.horizon == ONE_SHOT else None),
                    "continue_prob": c.continue_prob if c.horizon == RANDOM else None, "payoffs": dict(payoffs), "history": [dict(h) for h in seen[role]],
                }
                asks[role] = (Prompt(text, obs, phase=CHOOSE, instructions=fmt), kind, kind.of(False))
            answers = await table.ask_each(asks)
            cooperated = [answers[role].cooperates() for role in ROLES]  # type: ignore[union-attr]
            valid = [table.last_valid(role) for role in ROLES]
            for role, yes, ok in zip(ROLES, cooperated, valid):
                if ok:
                    table.note_metrics(role, {"cooperate": 1.0 if yes else 0.0, "round": r})
            points = round_points(c, *cooperated)
            words = [COOPERATE if yes else DEFECT for yes in cooperated]
            history.append({"round": r, "choices": words, "valid": valid, "points": list(points)})
            for i, role in enumerate(ROLES):
                j = 1 - i
                seen[role].append({"round": r, "own": words[i], "other": words[j], "points": points[i], "other_points": points[j]})
            if not self._goes_on(table, r):
                break
            for i, role in enumerate(ROLES):
                j = 1 - i
                labels = [c.cooperate_label if yes else c.defect_label for yes in cooperated]
                table.tell(role, self.text(role).render("result", round=r, mine=labels[i], theirs=labels[j], points=points[i], other_points=points[j], **rules))
        return {
            "horizon": c.horizon,
            "rounds_played": len(history),
            "payoffs": payoffs,
            "labels": [c.cooperate_label, c.defect_label],
            "continue_prob": c.continue_prob if c.horizon == RANDOM else None,
            "roles": list(ROLES),
            "history": history,
            "points": {role: sum(h["points"][i] for h in history) for i, role in enumerate(ROLES)},
        }

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """Each round's two choices and points as the player saw them, then both totals."""
        roles = outcome.get("roles", list(ROLES))
        if role not in roles:
            return ["The game is over."]
        i = roles.index(role)
        j = 1 - i
        labels = dict(zip((COOPERATE, DEFECT), outcome.get("labels", [COOPERATE, DEFECT])))
        history = outcome.get("history", [])
        n = len(history)
        lines = [f"You played {n} round{'s' if n != 1 else ''} with the other player."]
        if outcome.get("horizon") == RANDOM and outcome.get("continue_prob") is not None:
            lines[0] += f" After each round the game went on with a chance of {percent(outcome['continue_prob'])}; it ended after round {n}."
        for h in history:
            mine, theirs = labels[h["choices"][i]], labels[h["choices"][j]]
            lines.append(f"Round {h['round']}: you chose \"{mine}\" and the other player chose \"{theirs}\"; you received {h['points'][i]} points and the other player {h['points'][j]}.")
        totals = outcome.get("points", {})
        other = roles[j]
        lines.append(f"In all you received {totals.get(role, 0)} points and the other player {totals.get(other, 0)}.")
        return lines

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """Two decisions a round: one round, ``rounds`` (known) or at most ``max_rounds`` (random)."""
        c = config
        return 2 * (1 if c.horizon == ONE_SHOT else c.rounds if c.horizon == KNOWN else c.max_rounds)  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """The shares 0–1; a seat's payoff from 0 to the largest payoff / T; the efficiency
        between the smallest and the largest round total / 2R; the rounds 1 to the most played."""
        c = config
        pays = (c.reward, c.temptation, c.sucker, c.punishment)  # type: ignore[attr-defined]
        totals = (2 * c.reward, c.temptation + c.sucker, 2 * c.punishment)  # type: ignore[attr-defined]
        seat = (0.0, max(pays) / c.temptation) if c.temptation else (None, None)  # type: ignore[attr-defined]
        both = (min(totals) / (2 * c.reward), max(totals) / (2 * c.reward)) if c.reward else (None, None)  # type: ignore[attr-defined]
        shares = ("cooperation", "cooperation_first", "cooperation_player_1", "cooperation_player_2", "mutual_cooperation")
        return {**{m: (0.0, 1.0) for m in shares}, "payoff_player_1": seat, "payoff_player_2": seat, "efficiency": both, "rounds_played": (1.0, cls.max_turns(c) / 2)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """cooperation (and _first, per seat), mutual_cooperation, payoff per seat, efficiency,
        rounds_played (module doc)."""
        history = outcome["history"]
        n = len(history)
        t, r = outcome["payoffs"]["temptation"], outcome["payoffs"]["reward"]

        def choices(rounds: list[dict[str, Any]], seats: tuple[int, ...] = (0, 1)) -> list[bool]:
            return [h["choices"][k] == COOPERATE for h in rounds for k in seats if h["valid"][k]]

        out = {
            "cooperation": _share(choices(history)),
            "cooperation_first": _share(choices(history[:1])),
            "mutual_cooperation": _share([h["choices"] == [COOPERATE, COOPERATE] for h in history]),
        }
        for k, role in enumerate(outcome["roles"]):
            out[f"cooperation_{role}"] = _share(choices(history, (k,)))
        for role in outcome["roles"]:
            out[f"payoff_{role}"] = outcome["points"][role] / (t * n)
        out["efficiency"] = sum(outcome["points"].values()) / (2 * r * n)
        out["rounds_played"] = float(n)
        return out
