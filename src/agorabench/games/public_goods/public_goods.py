"""Public goods game: the linear voluntary contribution mechanism, with an optional punishment
stage as in Fehr & Gächter (2000, "Cooperation and punishment in public goods experiments",
American Economic Review 90(4):980–994). Defaults: groups of four, 20 tokens a round and a return
of 0.4 per token, the design of Fehr & Gächter's experiments as the comment cited below
describes it; ten rounds.

Rules. ``players`` N (2–20) play ``rounds`` T (1–30) rounds in one fixed group. At the start of
each round every player i receives ``endowment`` E tokens and decides, simultaneously with the
others and without seeing their choices of that round, a whole number c_i of them (0 ≤ c_i ≤ E)
to put into the group account (JSON ``{"contribution": N}``). Each token in the account pays
every player ``mpcr`` (the marginal per-capita return) tokens, so the first-stage payoff is

    π_i = E − c_i + mpcr · Σ_j c_j.

With mpcr < 1 every token a player contributes lowers its own payoff by 1 − mpcr whatever the
others do, so contributing nothing is dominant; with mpcr · N > 1 every contributed token raises
the group's payoff by mpcr · N − 1, so everyone contributing everything maximises it; with
mpcr ≥ 1 contributing everything is (weakly, at mpcr = 1) dominant.

Punishment (``punishment = true``). After the contributions each player sees every other
player's contribution (by name), the group total and its own first-stage payoff, and assigns each
other player p_ij punishment points, a whole number from 0 to ``punish_max`` (JSON
``{"player_2": N, ...}``, one field per other player), again simultaneously. Each point costs
the punisher ``punish_cost`` tokens and takes ``punish_effect`` tokens from the player punished:

    loss_i  = min(punish_effect · Σ_j p_ji, π_i)    (what punishment takes never exceeds π_i)
    final_i = π_i − punish_cost · Σ_j p_ij − loss_i.

So the punishment a player receives can bring its round payoff down to 0 but not below; only
its own spending on punishment can make its round payoff negative (at most punish_cost ·
punish_max · (N − 1) below zero). The defaults (cost 1, effect 3) are the 1:3 rule of Fehr &
Gächter (2002, "Altruistic punishment in humans", Nature 415:137–140): one token spent on
punishment took three from the punished, read in the comment on that experiment at
doi:10.1038/nature03256 (Nature 433(7021), 2005, "Egalitarian motive and altruistic
punishment"; PubMed 15637787). Fehr & Gächter's (2000) own rule could not be read in a source we
could cite, so it is not the default. The bound ``punish_max`` = 10 points per target is our
choice (the source read gives none).

Feedback. Without punishment, every player is told after each round the others' contributions
as an anonymous list (largest first), the group total and its own payoff. With punishment, the
second-stage question shows the contributions and the first-stage payoff, and the result says
the points the player assigned and their cost, the points it received and what they took, and its
payoff. The last round's result is left to the results page.

Bad answers are re-asked with the error; a contribution that stays invalid becomes 0 (nothing is
put in) and a punishment decision that stays invalid becomes 0 points for everyone (nobody is
punished); either way the turn is recorded invalid.

Noted per valid decision (``table.note_metrics``): ``contribution_share`` = c / E and ``round``
on a contribution; ``punishment_points`` (the points assigned in all) and ``round`` on a
punishment decision; and on each player's last decision of a round, valid or not,
``payoff_share`` = final_i / E.

Metrics, over the game (c valid contributions only; NaN where a mean has nothing to average):

- contribution_share       = mean of c / E over players and rounds;
- contribution_share_first = the same over round 1; contribution_share_last over round T;
- efficiency    = the group's payoff (all players, all rounds, after punishment) / the group's
  payoff had everyone contributed everything, N² · mpcr · E · T (1 for full contribution by all;
  1 / (mpcr · N) when nobody contributes and nobody punishes);
- punishment_points = mean points a player assigned in a round (its valid decisions); NaN without
  punishment;
- payoff_share  = the mean payoff of a player in a round / E.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import create_model, Field

from ...core.actions import Action
from ...core.game import Game, GameConfig
from ...core.table import Prompt, Table

CONTRIBUTE, PUNISH = "contribute", "punish"


class PublicGoodsConfig(GameConfig):
    """``players`` N (2–20), ``rounds`` T (1–30), ``endowment`` E tokens a round, ``mpcr`` the
    tokens each player gets per token in the group account; with ``punishment``, the second
    stage: ``punish_cost`` tokens a point costs the punisher, ``punish_effect`` tokens it takes
    from the punished, ``punish_max`` points at most per target and round."""

    players: int = Field(4, ge=2, le=20)
    rounds: int = Field(10, ge=1, le=30)
    endowment: int = Field(20, ge=1, le=10_000)
    mpcr: float = Field(0.4, gt=0, le=10)
    punishment: bool = False
    punish_cost: float = Field(1.0, ge=0, le=100)
    punish_effect: float = Field(3.0, ge=0, le=100)
    punish_max: int = Field(10, ge=1, le=100)


def role_names(players: int) -> tuple[str, ...]:
    """The seats: ``player_1`` … ``player_N``."""
    return tuple(f"player_{i}" for i in range(1, players + 1))


def label(role: str) -> str:
    """How a seat is named in prompts: ``player_2`` → "Player 2"."""
    return role.replace("_", " ").capitalize()


def tokens(x: float) -> str:
    """A number of tokens as text: whole numbers without decimals, others with at most two."""
    if abs(x - round(x)) < 1e-9:
        return str(int(round(x)))
    return f"{x:.2f}".rstrip("0").rstrip(".")


def exact(x: float) -> str:
    """A parameter as text without rounding it away: 0.4 → "0.4", 1.0 → "1", 1/3 → "0.333333"."""
    return f"{x:g}"


def listing(values: list[int]) -> str:
    """Numbers as a list in words: "12, 5 and 0"."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _tidy(x: float) -> float:
    """A payoff rounded to 9 decimals (so 0.4 · 30 is stored as 12.0)."""
    return round(x, 9) + 0.0


class NumbersForm(Action):
    """A decision of whole numbers, asked in JSON with the numbers written bare."""

    response_format: ClassVar = "json"

    @classmethod
    def format_instructions(cls) -> str:
        fields = ", ".join(f'"{name}": <{info.description or name}>' for name, info in cls.model_fields.items())
        return "Answer with a JSON object of this form:\n{" + fields + "}"


class Contribution(NumbersForm):
    """Tokens put into the group account; :func:`contribution_type` bounds it by the endowment."""

    contribution: int = Field(ge=0, description="a whole number of tokens")


@lru_cache(maxsize=None)
def contribution_type(endowment: int) -> type[Contribution]:
    """The contribution of a game with ``endowment`` tokens a round: 0 ≤ contribution ≤ endowment."""
    field = (int, Field(ge=0, le=endowment, description=f"a whole number of tokens from 0 to {endowment}"))
    return create_model(f"Contribution_{endowment}", __base__=Contribution, __module__=__name__, contribution=field)


class Punishment(NumbersForm):
    """Punishment points for each other player; :func:`punishment_type` makes one field per target."""

    def points(self) -> dict[str, int]:
        """Points by target."""
        return {name: int(value) for name, value in self.model_dump().items()}


@lru_cache(maxsize=None)
def punishment_type(targets: tuple[str, ...], most: int) -> type[Punishment]:
    """The punishment decision of a player whose other group members are ``targets``: a whole
    number of points from 0 to ``most`` for each of them."""
    fields: dict[str, Any] = {
        t: (int, Field(ge=0, le=most, description=f"punishment points for {label(t)}, from 0 to {most}")) for t in targets
    }
    name = "Punishment_" + "_".join(t.rsplit("_", 1)[-1] for t in targets) + f"_max{most}"
    return create_model(name, __base__=Punishment, __module__=__name__, **fields)


def first_stage(endowment: int, mpcr: float, contributions: list[int]) -> list[float]:
    """π_i = E − c_i + mpcr · Σ_j c_j for each player (in seat order)."""
    total = sum(contributions)
    return [_tidy(endowment - c + mpcr * total) for c in contributions]


def after_punishment(stage1: list[float], points: list[list[int]], cost: float, effect: float) -> tuple[list[float], list[float], list[float]]:
    """(costs, losses, final payoffs) in seat order; ``points[i][j]`` are the points player i
    assigned to player j. cost_i = cost · Σ_j p_ij; loss_i = min(effect · Σ_j p_ji, π_i);
    final_i = π_i − cost_i − loss_i."""
    n = len(stage1)
    costs = [_tidy(cost * sum(points[i])) for i in range(n)]
    losses = [_tidy(min(effect * sum(points[j][i] for j in range(n)), max(stage1[i], 0.0))) for i in range(n)]
    return costs, losses, [_tidy(stage1[i] - costs[i] - losses[i]) for i in range(n)]


class PublicGoods(Game):
    name = "public_goods"
    Config = PublicGoodsConfig
    prompt_dir = Path(__file__).parent / "prompts"

    @classmethod
    def roles(cls, config: GameConfig) -> tuple[str, ...]:
        return role_names(config.players)  # type: ignore[attr-defined]

    def _rules(self) -> dict[str, Any]:
        c = self.config
        return {
            "players": c.players, "rounds": c.rounds, "endowment": c.endowment, "mpcr": exact(c.mpcr),
            "full": tokens(c.mpcr * c.players * c.endowment), "punishment": c.punishment,
            "punish_cost": exact(c.punish_cost), "punish_effect": exact(c.punish_effect), "punish_max": c.punish_max,
        }

    async def play(self, table: Table) -> dict[str, Any]:
        c = self.config
        roles = self.roles(c)
        rules = self._rules()
        for role in roles:
            table.set_system(role, self.text(role).render("system", me=label(role), **rules))
        kind = contribution_type(c.endowment)
        seen: dict[str, list[dict[str, Any]]] = {role: [] for role in roles}  # each player's past rounds
        history: list[dict[str, Any]] = []
        for r in range(1, c.rounds + 1):
            asks = {}
            for role in roles:
                fmt = kind.format_instructions()
                text = self.text(role).render("contribute", round=r, rounds=c.rounds, endowment=c.endowment, format=fmt)
                obs = {"role": role, "round": r, "rounds": c.rounds, "endowment": c.endowment, "mpcr": c.mpcr, "players": c.players, "punishment": c.punishment, "history": [dict(h) for h in seen[role]]}
                asks[role] = (Prompt(text, obs, phase=CONTRIBUTE, instructions=fmt), kind, kind(contribution=0))
            answers = await table.ask_each(asks)
            given = [answers[role].contribution for role in roles]  # type: ignore[union-attr]
            valid = [table.last_valid(role) for role in roles]
            for role, amount, ok in zip(roles, given, valid):
                if ok:
                    table.note_metrics(role, {"contribution_share": amount / c.endowment, "round": r})
            total = sum(given)
            stage1 = first_stage(c.endowment, c.mpcr, given)
            points = [[0] * len(roles) for _ in roles]
            punish_valid: list[bool] = []
            if c.punishment:
                points, punish_valid = await self._punish(table, r, roles, given, stage1)
            costs, losses, final = after_punishment(stage1, points, c.punish_cost, c.punish_effect)
            for i, role in enumerate(roles):
                table.note_metrics(role, {"payoff_share": final[i] / c.endowment})
            history.append({
                "round": r, "contributions": given, "valid_contributions": valid, "total": total, "stage1": stage1,
                "points": points if c.punishment else None, "valid_punishments": punish_valid if c.punishment else None,
                "costs": costs, "losses": losses, "payoffs": final,
            })
            for i, role in enumerate(roles):
                others = sorted((given[j] for j in range(len(roles)) if j != i), reverse=True)
                received = sum(points[j][i] for j in range(len(roles)))
                seen[role].append({
                    "round": r, "own": given[i], "others": others, "total": total, "payoff": final[i],
                    "assigned": sum(points[i]), "received": received,
                })
                if r < c.rounds:
                    table.tell(role, self.text(role).render(
                        "result", round=r, punishment=c.punishment, others=listing(others), several=len(others) > 1, total=total,
                        share=tokens(c.mpcr * total), payoff=tokens(final[i]), given=sum(points[i]), cost=tokens(costs[i]),
                        received=received, loss=tokens(losses[i]),
                    ))
        return {
            "players": c.players, "rounds": c.rounds, "endowment": c.endowment, "mpcr": c.mpcr,
            "punishment": c.punishment, "punish_cost": c.punish_cost, "punish_effect": c.punish_effect, "punish_max": c.punish_max,
            "roles": list(roles), "history": history,
            "earnings": {role: _tidy(sum(h["payoffs"][i] for h in history)) for i, role in enumerate(roles)},
        }

    async def _punish(self, table: Table, r: int, roles: tuple[str, ...], given: list[int], stage1: list[float]) -> tuple[list[list[int]], list[bool]]:
        """The second stage of round ``r``: every player assigns points to every other one at
        once; returns the points matrix (punisher × target, seat order) and which were valid."""
        c = self.config
        total = sum(given)
        asks = {}
        for i, role in enumerate(roles):
            targets = tuple(t for t in roles if t != role)
            kind = punishment_type(targets, c.punish_max)
            fmt = kind.format_instructions()
            others = [(label(t), given[roles.index(t)]) for t in targets]
            text = self.text(role).render(
                "punish", round=r, rounds=c.rounds, others=others, own=given[i], total=total, share=tokens(c.mpcr * total),
                payoff=tokens(stage1[i]), punish_max=c.punish_max, punish_cost=exact(c.punish_cost), punish_effect=exact(c.punish_effect), format=fmt,
            )
            obs = {
                "role": role, "round": r, "rounds": c.rounds, "endowment": c.endowment, "own": given[i],
                "contributions": {t: given[roles.index(t)] for t in targets}, "total": total, "payoff": stage1[i],
                "punish_max": c.punish_max, "punish_cost": c.punish_cost, "punish_effect": c.punish_effect,
            }
            asks[role] = (Prompt(text, obs, phase=PUNISH, instructions=fmt), kind, kind(**{t: 0 for t in targets}))
        answers = await table.ask_each(asks)
        points = [[0] * len(roles) for _ in roles]
        valid = []
        for i, role in enumerate(roles):
            chosen = answers[role].points()  # type: ignore[union-attr]
            for target, p in chosen.items():
                points[i][roles.index(target)] = p
            ok = table.last_valid(role)
            valid.append(ok)
            if ok:
                table.note_metrics(role, {"punishment_points": float(sum(chosen.values())), "round": r})
        return points, valid

    def describe(self, outcome: dict[str, Any], role: str) -> list[str]:
        """The rounds as the player saw them, then its earnings beside the group's average."""
        roles = outcome.get("roles", [])
        if role not in roles:
            return ["The game is over."]
        i, n, e = roles.index(role), len(roles), outcome["endowment"]
        lines = [f"You played {outcome['rounds']} round{'s' if outcome['rounds'] != 1 else ''} in a group of {n}; each round everyone received {e} tokens and chose how many to put into the group account."]
        for h in outcome.get("history", []):
            line = f"Round {h['round']}: you put in {h['contributions'][i]} of {e} tokens and the group {h['total']} in all"
            if h.get("points") is not None:
                assigned, received = sum(h["points"][i]), sum(row[i] for row in h["points"])
                line += f"; you assigned {assigned} punishment point{'s' if assigned != 1 else ''} (costing you {tokens(h['costs'][i])} tokens) and received {received} (taking {tokens(h['losses'][i])} tokens from you)"
            lines.append(line + f"; your payoff was {tokens(h['payoffs'][i])} tokens.")
        earnings = outcome.get("earnings", {})
        mean = sum(earnings.values()) / len(earnings) if earnings else 0.0
        lines.append(f"In all you earned {tokens(earnings.get(role, 0.0))} tokens; the average player in your group earned {tokens(mean)}.")
        return lines

    @classmethod
    def max_turns(cls, config: GameConfig) -> int:
        """Each player decides once a round, twice with punishment."""
        c = config
        return c.rounds * c.players * (2 if c.punishment else 1)  # type: ignore[attr-defined]

    @classmethod
    def metric_ranges(cls, config: GameConfig) -> dict[str, tuple[float | None, float | None]]:
        """The contribution shares 0–1; a player's mean payoff / E between 1 (nobody gives) and
        N·mpcr (everybody gives all), the efficiency that over N·mpcr; with punishment these
        have no lower bound (losses) and points assigned are 0 to punish_max·(N − 1)."""
        c = config
        n, a = c.players, c.mpcr  # type: ignore[attr-defined]
        payoff = (min(1.0, n * a), max(1.0, n * a))
        eff = (min(1.0, 1 / (n * a)), max(1.0, 1 / (n * a)))
        out = {m: (0.0, 1.0) for m in ("contribution_share", "contribution_share_first", "contribution_share_last")}
        if c.punishment:  # type: ignore[attr-defined]
            return {**out, "payoff_share": (None, payoff[1]), "efficiency": (None, eff[1]), "punishment_points": (0.0, float(c.punish_max * (n - 1)))}  # type: ignore[attr-defined]
        return {**out, "payoff_share": payoff, "efficiency": eff, "punishment_points": (0.0, 0.0)}

    def metrics(self, outcome: dict[str, Any]) -> dict[str, float]:
        """contribution_share (and _first, _last), efficiency, punishment_points, payoff_share
        (module doc)."""
        e, n, t, mpcr = outcome["endowment"], outcome["players"], outcome["rounds"], outcome["mpcr"]
        history = outcome["history"]

        def share(rounds: list[dict[str, Any]]) -> float:
            values = [c / e for h in rounds for c, ok in zip(h["contributions"], h["valid_contributions"]) if ok]
            return sum(values) / len(values) if values else math.nan

        group = sum(sum(h["payoffs"]) for h in history)
        punished = [sum(row) for h in history if h.get("points") is not None for row, ok in zip(h["points"], h["valid_punishments"]) if ok]
        return {
            "contribution_share": share(history),
            "contribution_share_first": share(history[:1]),
            "contribution_share_last": share(history[-1:]),
            "efficiency": group / (n * n * mpcr * e * t),
            "punishment_points": sum(punished) / len(punished) if outcome["punishment"] and punished else math.nan,
            "payoff_share": group / (n * t * e),
        }
