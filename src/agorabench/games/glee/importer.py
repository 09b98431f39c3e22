"""Importer of GLEE games in the original project's folder format: one folder per game holding
``config.json`` (the game's parameters and who played each side) and ``game.csv`` (the moves).

Every game is replayed through our own rules: each logged move is handed, as a JSON answer, to
the game module's ``play`` by a replay player, so the outcome and metrics are computed by
:mod:`agorabench.games.glee` exactly as for a game played here, and every move our rules reject
(a split that does not add up, an empty seller message ...) is stored as an invalid turn with
the game's declared fallback and reported. A log whose order of moves our rules cannot follow
(a move by the wrong player, moves missing or left over) is reported and not stored.

Parameter mapping (our reading of the original data):

- bargaining: ``money_to_divide`` → money; ``max_rounds`` 99 → horizon "inf" (with
  ``infinite_rounds`` 99), otherwise the stated horizon; δ from ``player_{1,2}_args.delta`` or,
  in the older format, ``game_args.delta_{1,2}``;
- negotiation: ``seller_value``/``buyer_value`` → f_a/f_b; ``product_price_order`` → money;
  ``max_rounds`` 30 → "inf" (``infinite_rounds`` 30); the original interface let the responder
  leave for an outside option (``SellToJhon``/``BuyFromJhon``), our default
  ``outside_option = true``, and those moves are ``quit`` decisions;
- persuasion: ``product_price`` → money; ``is_seller_know_cv`` → complete_info;
  ``seller_message_type == "text"`` → messages; ``is_myopic`` → myopic; ``total_rounds`` →
  horizon; ``c`` → c; ``is_buyer_know_p`` → buyer_knows_p; ``allow_buyer_message`` →
  buyer_messages (the buyer's ``message`` column); each round's quality is taken from the
  ``Nature`` rows instead of the rng.

Seats: ``otree`` is a human participant (``human``), ``otree_LLM`` the model the humans played
against, Gemini-1.5-flash according to the paper's Appendix B (``gemini-1.5-flash``).
"""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any

from ...core.game import Game, Prompts
from ...core.table import Reply, Table, TurnRequest
from ...records import GameRecord, Records, StudyRecord
from .bargaining import Bargaining
from .negotiation import Negotiation
from .persuasion import Persuasion

PLAYER_LABELS = {"otree": "human", "otree_LLM": "gemini-1.5-flash"}
ROLE_OF = {"Alice": "alice", "Bob": "bob"}
INFINITE = {"bargaining": 99, "negotiation": 30}
NEGOTIATION_DECISIONS = {"AcceptOffer": "accept", "RejectOffer": "reject", "SellToJhon": "quit", "BuyFromJhon": "quit"}


class LogMismatch(RuntimeError):
    """The log's moves cannot be followed by our rules."""


class ReplayLog:
    """The logged moves in order, shared by both replay players."""

    def __init__(self, moves: list[tuple[str, str, dict[str, Any]]]) -> None:
        self.moves = moves  # (role, phase, answer)
        self.next = 0
        self.violations: list[str] = []

    def take(self, role: str, phase: str) -> dict[str, Any]:
        if self.next >= len(self.moves):
            raise LogMismatch(f"the rules ask {role} for a '{phase}' move but the log has no more moves")
        who, kind, answer = self.moves[self.next]
        if who != role or kind != phase:
            raise LogMismatch(f"move {self.next + 1}: the rules ask {role} for a '{phase}' move but the log has a '{kind}' move by {who}")
        self.next += 1
        return answer


class ReplayPlayer:
    """Answers each request with the next logged move of its role, as JSON text, so the table
    parses and validates it like any other answer."""

    def __init__(self, log: ReplayLog) -> None:
        self.log = log
        self.current = ""

    async def act(self, request: TurnRequest) -> Reply:
        if request.attempt == 0:
            answer = self.log.take(request.role, request.prompt.phase)
            self.current = json.dumps(answer, ensure_ascii=False)
        else:  # a rejected move stays what it was
            self.log.violations.append(f"{request.role} {request.prompt.phase} in round {request.prompt.observation.get('round')}: {request.error}")
        return Reply(text=self.current, cached=True)


class ReplayPersuasion(Persuasion):
    """Persuasion with each round's quality read from the log (``qualities``, set per game)."""

    qualities: tuple[str, ...] = ()

    def nature(self, table: Table, t: int) -> str:
        if t > len(self.qualities):
            raise LogMismatch(f"the log has no quality for round {t}")
        return self.qualities[t - 1]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _text(value: str | None) -> str:
    return "" if value is None or value.strip() in ("nan", "None") else value


def _horizon(family: str, max_rounds: int) -> Any:
    return "inf" if max_rounds == INFINITE[family] else max_rounds


def _bargaining(cfg: dict[str, Any], rows: list[dict[str, str]]) -> tuple[type[Game], dict[str, Any], list, list[str]]:
    args = cfg["game_args"]
    delta_a = cfg.get("player_1_args", {}).get("delta", args.get("delta_1"))
    delta_b = cfg.get("player_2_args", {}).get("delta", args.get("delta_2"))
    config = {
        "delta_a": float(delta_a),
        "delta_b": float(delta_b),
        "money": float(args["money_to_divide"]),
        "horizon": _horizon("bargaining", int(args["max_rounds"])),
        "complete_info": bool(args["complete_information"]),
        "messages": bool(args["messages_allowed"]),
        "infinite_rounds": INFINITE["bargaining"],
    }
    moves = []
    for r in rows:
        role = ROLE_OF[r["player"]]
        if r["decision"] in ("None", ""):
            answer: dict[str, Any] = {"alice_gain": float(r["alice_gain"]), "bob_gain": float(r["bob_gain"])}
            if config["messages"]:
                answer["message"] = _text(r["message"])
            moves.append((role, "offer", answer))
        else:
            moves.append((role, "respond", {"decision": r["decision"]}))
    return Bargaining, config, moves, []


def _negotiation(cfg: dict[str, Any], rows: list[dict[str, str]]) -> tuple[type[Game], dict[str, Any], list, list[str]]:
    args = cfg["game_args"]
    config = {
        "f_a": float(args["seller_value"]),
        "f_b": float(args["buyer_value"]),
        "money": float(args["product_price_order"]),
        "horizon": _horizon("negotiation", int(args["max_rounds"])),
        "complete_info": bool(args["complete_information"]),
        "messages": bool(args["messages_allowed"]),
        "outside_option": True,
        "infinite_rounds": INFINITE["negotiation"],
    }
    moves = []
    for r in rows:
        role = ROLE_OF[r["player"]]
        if r["decision"] == "":
            answer: dict[str, Any] = {"price": float(r["product_price"])}
            if config["messages"]:
                answer["message"] = _text(r["message"])
            moves.append((role, "offer", answer))
        else:
            moves.append((role, "respond", {"decision": NEGOTIATION_DECISIONS.get(r["decision"], r["decision"])}))
    return Negotiation, config, moves, []


def _persuasion(cfg: dict[str, Any], rows: list[dict[str, str]]) -> tuple[type[Game], dict[str, Any], list, list[str]]:
    args = cfg["game_args"]
    config = {
        "p": float(args["p"]),
        "v": float(args["v"]),
        "money": float(args["product_price"]),
        "horizon": int(args["total_rounds"]),
        "complete_info": bool(args["is_seller_know_cv"]),
        "messages": args["seller_message_type"] == "text",
        "myopic": bool(args["is_myopic"]),
    }
    config["c"] = float(args.get("c", 0))
    config["buyer_knows_p"] = bool(args.get("is_buyer_know_p", True))
    config["buyer_messages"] = bool(args.get("allow_buyer_message", False))
    moves, qualities = [], []
    for r in rows:
        if r["player"] == "Nature":
            qualities.append("high" if r["round_quality"].startswith("high") else "low")
        elif r["player"] == "Alice":
            answer = {"message": _text(r["message"])} if config["messages"] else {"decision": r["decision"]}
            moves.append(("alice", "signal", answer))
        else:
            answer = {"decision": r["decision"]}
            if config["buyer_messages"]:
                answer["message"] = _text(r.get("message"))
            moves.append(("bob", "buy", answer))
    game_cls = type("ReplayPersuasionGame", (ReplayPersuasion,), {"qualities": tuple(qualities)})
    return game_cls, config, moves, []


def _summary(violations: list[str]) -> list[str]:
    """One line for a game's rejected moves: how many, and the first one."""
    if not violations:
        return []
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    return [f"{len(violations)} logged move(s) break our rules, stored as invalid turns with the fallback: {violations[0]}{more}"]


BUILDERS = {"bargaining": _bargaining, "negotiation": _negotiation, "persuasion": _persuasion}


def replay_game(game_dir: Path) -> dict[str, Any]:
    """Replay one game folder through our rules; returns what the store needs plus problems.
    Raises LogMismatch (or KeyError/ValueError on a malformed folder)."""
    cfg = json.loads((game_dir / "config.json").read_text(encoding="utf-8"))
    family = cfg["game_type"]
    rows = _rows(game_dir / "game.csv")
    game_cls, config_values, moves, notes = BUILDERS[family](cfg, rows)
    config = game_cls.Config(**config_values)
    game = game_cls(config, Prompts(game_cls.prompt_dir), names={})
    log = ReplayLog(moves)
    table = Table({"alice": ReplayPlayer(log), "bob": ReplayPlayer(log)}, seed=0, max_retries=1)
    outcome = asyncio.run(game.play(table))
    if log.next != len(log.moves):
        raise LogMismatch(f"the game ended under our rules after {log.next} of the {len(log.moves)} logged moves")
    outcome["config_name"] = cfg.get("name")
    outcome["source_id"] = game_dir.name
    outcome["rule_violations"] = list(log.violations)
    return {
        "family": family,
        "game": game_cls.name,
        "config": config.model_dump(mode="json"),
        "seats": {"alice": PLAYER_LABELS.get(cfg.get("player_1_type"), str(cfg.get("player_1_type"))), "bob": PLAYER_LABELS.get(cfg.get("player_2_type"), str(cfg.get("player_2_type")))},
        "outcome": outcome,
        "metrics": game.metrics(outcome),
        "turns": table.turns,
        "prompt_version": game.prompts.version,
        "problems": notes + _summary(log.violations),
    }


def import_logs(folder: Path, study: str) -> Records:
    """Every game folder under ``folder`` as records (see :mod:`agorabench.records`): one
    :class:`GameRecord` per replayed game, a problem string per skipped game or broken rule, and
    the study's row after its games."""
    folder = Path(folder)
    imported: set[str] = set()
    for config_path in sorted(folder.rglob("config.json")):
        game_dir = config_path.parent
        where = str(game_dir.relative_to(folder)) if game_dir != folder else game_dir.name
        if not (game_dir / "game.csv").exists():
            yield f"{where}: no game.csv, skipped"
            continue
        try:
            result = replay_game(game_dir)
        except LogMismatch as exc:
            yield f"{where}: {exc}; not imported"
            continue
        except (KeyError, ValueError, TypeError, json.JSONDecodeError) as exc:
            yield f"{where}: unreadable game ({type(exc).__name__}: {exc}); not imported"
            continue
        yield from (f"{where}: {p}" for p in result["problems"])
        yield GameRecord(
            id=f"glee-{result['family']}-{game_dir.name}",
            study=study,
            game=result["game"],
            config=result["config"],
            seats=result["seats"],
            seed=0,
            prompt_version=result["prompt_version"],
            outcome=result["outcome"],
            metrics=result["metrics"],
            turn_records=result["turns"],
            source="import:glee",
        )
        imported.add(result["game"])
    if imported:
        games = sorted(imported)
        yield StudyRecord(study, games[0], {"name": study, "source": "import:glee", "folder": str(folder), "games": games}, family="glee")
