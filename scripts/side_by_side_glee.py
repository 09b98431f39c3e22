"""Play the same GLEE configurations in the original project and in agorabench, side by side.

    python scripts/side_by_side_glee.py --original PATH [--out FILE] [--study studies/glee_negotiation.toml ...]

PATH is a checkout of github.com/eilamshapira/GLEE at commit 3c9efe0 (the code of the paper's
time; later commits keep the prompt logic). Only its model layer is replaced: a player class
with the four methods every original player implements, whose answers come from one
deterministic policy that both engines share. That policy decides from what any player knows at
its turn (its role, what is asked, how many answers it gave before, its own value, the quality it
was shown), so the two engines play the same moves as long as they tell players the same facts.
Nature's draws (persuasion's qualities) come from the original's global generator; ours replays
them. The original runs with pandas only (no provider libraries are imported).

For every configuration of the given ready studies (default: the three GLEE studies) the script
prints each engine's outcome and whether they agree, then every prompt both engines sent, turn by
turn (the system message when it changed, then the new user text), so the differences in what
players are told can be read side by side. Outcomes must agree; the wording is ours by design.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import random
import re
import sys
from pathlib import Path
from typing import Any

from agorabench import families
from agorabench.core.game import Prompts
from agorabench.core.study import load_study
from agorabench.core.table import Reply, Table

ROOT = Path(__file__).resolve().parents[1]
STUDIES = [ROOT / "studies" / f"glee_{g}.toml" for g in ("bargaining", "negotiation", "persuasion")]


# --- the shared policy ---------------------------------------------------------------------------


def policy(phase: str, role: str, answered: int, value: float | None = None, total: float | None = None, high: bool | None = None, recommended: bool | None = None) -> dict[str, Any]:
    """The move of a player: ``phase`` is offer / respond / price / signal / buy; ``answered`` is
    how many answers this player gave before. Offers keep 60 % of the total; a price asks 10 %
    above one's own value (seller) or below it (buyer); a responder rejects its first offer and
    accepts from its second on; the seller recommends a high product only; the buyer follows."""
    other = "bob" if role == "alice" else "alice"
    if phase == "offer":
        mine = int(total * 0.6)
        return {f"{role}_gain": mine, f"{other}_gain": int(total) - mine}
    if phase == "respond":
        return {"decision": "accept" if answered >= 1 else "reject"}
    if phase == "price":
        return {"price": round(value * (1.1 if role == "alice" else 0.9))}
    if phase == "signal":
        return {"decision": "yes" if high else "no"}
    if phase == "buy":
        return {"decision": "yes" if recommended else "no"}
    raise ValueError(phase)


# --- the original, with its model layer replaced -------------------------------------------------


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def original_answer(role: str, messages: list[dict[str, str]], messages_on: bool) -> str:
    """The policy's move written as the original's answer format asks (read from its system
    message, which carries the current request's format)."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    user = messages[-1]["content"]
    answered = sum(m["role"] == "assistant" for m in messages)
    note = {"message": "my offer"} if messages_on else {}
    if '_gain": The part that you will receive' in system:
        total = _num(re.search(r"divide \$([\d,]+(?:\.\d+)?)", system + user).group(1))
        return json.dumps({**policy("offer", role, answered, total=total), **note})
    if '{"decision": "accept"}' in system:
        return json.dumps(policy("respond", role, answered))
    if '"product_price": The price you want' in system:
        value = _num(re.search(r"worth no (?:less|more) then \$([\d,]+(?:\.\d+)?)", system).group(1))
        return json.dumps({"product_price": policy("price", role, answered, value=value)["price"], **note})
    if '"AcceptOffer"' in system:
        return json.dumps({"decision": "AcceptOffer" if policy("respond", role, answered)["decision"] == "accept" else "RejectOffer"})
    if "Send your message in JSON format" in system:
        return json.dumps({"message": "This product is excellent."})
    if "Would you recommend" in system:
        return json.dumps(policy("signal", role, answered, high="high-quality." in user))
    if 'Answer in JSON format with {"decision": "yes"' in system:
        return json.dumps(policy("buy", role, answered, recommended="does not recommend" not in user))
    raise ValueError("no answer for this request:\n" + system[-300:] + "\n---\n" + user[-300:])


def run_original(checkout: Path, game_type: str, args: dict[str, Any], deltas: tuple[float, float], messages_on: bool) -> tuple[list[dict], list[dict]]:
    """(calls, actions) of one original game: every model call's messages and reply, and the
    original's action log."""
    sys.path.insert(0, str(checkout))
    here = os.getcwd()
    os.chdir(checkout)  # the original opens its prompt files by relative path
    try:
        from games.game_factory import game_factory
        from players.base_player import Player
        from utils.utils import DataLogger

        calls: list[dict] = []

        class Stub(Player):
            """The four methods an original player implements; the answer is the policy's."""

            def __init__(self, public_name: str, delta: float, player_id: int) -> None:
                super().__init__(public_name, delta, player_id)
                self.system, self.turns = "", []

            def add_message(self, message, role="user"):
                if role == "system":
                    self.system = message
                else:
                    self.turns.append({"role": "user", "content": message})

            def set_system_message(self, message):
                self.system = message

            def clean_conv(self):
                self.turns = []

            def get_text_answer(self, format_checker, decision=False):
                messages = ([{"role": "system", "content": self.system}] if self.system else []) + list(self.turns)
                text = original_answer(self.public_name.lower(), messages, messages_on)
                calls.append({"player": self.public_name.lower(), "messages": messages, "reply": text})
                self.turns.append({"role": "assistant", "content": text})
                return text

        random.seed(0)
        with contextlib.redirect_stdout(io.StringIO()):  # the original prints as it plays
            alice, bob = Stub("Alice", deltas[0], 0), Stub("Bob", deltas[1], 3)
            logger = DataLogger(alice, bob, game_type=game_type, game_args=args)
            logger.save = lambda: None  # the original writes CSV files and asks git for its commit
            game_factory(game_type, alice, bob, logger, args)
        return calls, logger.actions
    finally:
        os.chdir(here)
        sys.path.remove(str(checkout))


def _whole(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def original_args(game: str, c: Any) -> tuple[str, dict[str, Any], tuple[float, float]]:
    """The original's game type, arguments and discount factors for one of our configurations."""
    if game == "glee.bargaining":
        rounds = c.horizon if isinstance(c.horizon, int) else c.infinite_rounds
        return "bargaining", dict(money_to_divide=_whole(c.money), max_rounds=rounds, complete_information=c.complete_info, messages_allowed=c.messages, show_inflation_update=True), (c.delta_a, c.delta_b)
    if game == "glee.negotiation":
        rounds = c.horizon if isinstance(c.horizon, int) else c.infinite_rounds
        return "negotiation", dict(max_rounds=rounds, seller_value=c.f_a, buyer_value=c.f_b, complete_information=c.complete_info, product_price_order=_whole(c.money), messages_allowed=c.messages), (1.0, 1.0)
    rounds = c.horizon if isinstance(c.horizon, int) else c.infinite_rounds
    return "persuasion", dict(is_myopic=c.myopic, product_price=_whole(c.money), p=c.p, c=c.c, v=c.v, total_rounds=rounds, is_seller_know_cv=c.complete_info, is_buyer_know_p=c.buyer_knows_p, seller_message_type="text" if c.messages else "binary", allow_buyer_message=c.buyer_messages), (1.0, 1.0)


# --- ours ----------------------------------------------------------------------------------------


class Ours:
    """Our player seat with the same policy, answering in our answer format."""

    def __init__(self, calls: list[dict]) -> None:
        self.calls = calls

    async def act(self, request) -> Reply:
        obs, phase = request.prompt.observation, request.prompt.phase
        answered = sum(m["role"] == "assistant" for m in request.messages)
        family = obs.get("family")
        if family == "bargaining" and phase == "offer":
            move = policy("offer", request.role, answered, total=obs["money"])
        elif family == "negotiation" and phase == "offer":
            move = policy("price", request.role, answered, value=obs["own_value"])
        elif phase == "respond":
            move = policy("respond", request.role, answered)
        elif phase == "signal":
            move = {"message": "This product is excellent."} if obs.get("messages") else policy("signal", request.role, answered, high=obs.get("quality") == "high")
        else:
            move = policy("buy", request.role, answered, recommended=obs.get("message") != "no")
        fields = request.action_type.model_fields
        if "message" in fields and "message" not in move:
            move["message"] = "my offer"
        text = json.dumps(move)
        self.calls.append({"player": request.role, "messages": request.messages, "reply": text})
        return Reply(text=text)


def run_ours(game: str, config: Any, qualities: list[bool]) -> tuple[list[dict], dict]:
    cls = families.load_game(game)
    calls: list[dict] = []
    instance = cls(config, Prompts(cls.prompt_dir), names={})
    if qualities:  # replay the original's draws
        draws = iter(qualities)
        instance.nature = lambda table, t: "high" if next(draws) else "low"
    table = Table({r: Ours(calls) for r in cls.roles(config)}, seed=0)
    return calls, asyncio.run(instance.play(table))


# --- comparing -----------------------------------------------------------------------------------


def outcomes(game: str, actions: list[dict], ours: dict) -> tuple[str, str]:
    """The two outcomes in one comparable line each."""
    if game == "glee.persuasion":
        original = [a.get("decision") for a in actions if a.get("player") not in ("Alice", "Nature")]  # a myopic buyer is "the buyer"
        return " ".join(str(d) for d in original), " ".join("yes" if r["bought"] else "no" for r in ours["rounds"])
    decisions = [a for a in actions if "decision" in a]
    accepted = next((a for a in decisions if str(a["decision"]).lower() in ("accept", "acceptoffer")), None)
    if accepted:
        offer = [a for a in actions if a["round"] == accepted["round"] and "decision" not in a][-1]
        terms = f"price {offer['product_price']:g}" if "product_price" in offer else f"alice {offer['alice_gain']:g}, bob {offer['bob_gain']:g}"
        original = f"agreed in round {accepted['round']}: {terms}"
    else:
        original = f"no agreement after {len(decisions)} answers"
    agreed = ours.get("agreed_round")
    if agreed:
        terms = f"price {ours['price']:g}" if "price" in ours else f"alice {ours['alice_gain']:g}, bob {ours['bob_gain']:g}"
        return original, f"agreed in round {agreed}: {terms}"
    return original, f"no agreement after {len(ours.get('offers', []))} answers"


def show(calls: list[dict]) -> list[str]:
    """Each call as its new text: the system message when it changed, then the last user text."""
    lines, seen = [], {}
    for call in calls:
        messages = call["messages"]
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        if seen.get(call["player"]) != system:
            seen[call["player"]] = system
            lines.append(f"  [{call['player']} system]\n" + _indent(system))
        user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        lines.append(f"  [{call['player']} asked]\n" + _indent(user) + f"\n    -> {call['reply']}")
    return lines


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--original", required=True, type=Path, help="a checkout of the original GLEE project at 3c9efe0")
    parser.add_argument("--study", action="append", type=Path, help="ready GLEE study files (default: the three GLEE studies)")
    parser.add_argument("--out", type=Path, help="write the full side-by-side prompts here (default: print them)")
    parser.add_argument("--summary", action="store_true", help="print only the outcome table")
    args = parser.parse_args(argv)
    full: list[str] = []
    rows = []
    for path in args.study or STUDIES:
        study = load_study(path)
        for part in study._parts():
            for config in study.configurations(part):
                kind, oargs, deltas = original_args(part.game, config)
                label = f"{part.game} " + ", ".join(f"{k}={v}" for k, v in config.model_dump().items() if k in (study.file.grid or {}) or k in ("horizon", "messages", "myopic", "complete_info"))
                try:
                    ocalls, actions = run_original(args.original, kind, oargs, deltas, config.messages)
                except KeyError as exc:
                    if not (part.game == "glee.negotiation" and not config.messages):
                        raise
                    # 3c9efe's negotiation reads a message that is not there when messages are off
                    # (fixed in later commits): both engines play the pair with messages on instead
                    config = config.model_copy(update={"messages": True})
                    kind, oargs, deltas = original_args(part.game, config)
                    label += f" (played with messages on: the original fails without them, {type(exc).__name__} {exc})"
                    ocalls, actions = run_original(args.original, kind, oargs, deltas, True)
                qualities = [a["round_quality"] == "high-quality" for a in actions if "round_quality" in a]
                calls, outcome = run_ours(part.game, config, qualities)
                theirs, ours = outcomes(part.game, actions, outcome)
                rows.append((label, theirs, ours, "same" if theirs == ours else "DIFFERENT"))
                full += [f"=== {label}", f"original: {theirs}", f"ours:     {ours}", "--- original's prompts", *show(ocalls), "--- our prompts", *show(calls), ""]
    table = ["| configuration | original | ours | outcome |", "|---|---|---|---|"] + [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    print("\n".join(table))
    same = sum(r[3] == "same" for r in rows)
    print(f"\n{same} of {len(rows)} configurations end the same; {sum(r[3] == '-' for r in rows)} crash in the original")
    if not args.summary:
        if args.out:
            args.out.write_text("\n".join(full), encoding="utf-8")
            print(f"prompts side by side: {args.out}")
        else:
            print("\n".join(full))
    return 0 if same == sum(r[3] != "-" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
