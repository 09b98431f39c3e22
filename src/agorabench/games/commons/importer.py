"""Import GovSim runs (``log_env.json`` per run, with ``.hydra/config.yaml`` or ``config.yaml``
beside it when present) as finished ``commons`` games.

Per run: the harvesting records give, per month, the stock before and after harvesting and each
agent's requested (``wanted_resource``) and received (``resource_collected``) amounts; the
utterance records give the chat (the manager's report is not a decision and is skipped); the
``conversation_resource_limit`` records give the extracted limit. The outcome has the same shape
as a played game's, and the metrics are recomputed by :func:`commons_metrics`, judging collapse
with *our* rule for the scenario (so a trash run of the older environment that stopped at an
empty pool is an incomplete run here, not a collapse). A run that stops before its horizon
without a collapse is **censored**: ``outcome["censored"]`` and ``metrics["censored"]`` are set,
``survived`` is null, and reports leave it out of the survival rate. The metrics include
``survival_time_harvested``, the counting of the reproduction's Tables 1 and 2 (only months in
which someone asked for more than 0).

Scenario from the config's ``experiment.scenario`` (``fishing`` → fishery, ``sheep`` → pasture,
``pollution``, ``trash``, ``fishing_japanese`` → fishery in Japanese), else from the folder
names and the script of the utterances. Model per agent from ``llm.path`` (a list for mixed
runs), ``mix_llm`` (``${strong_model}``/``${weak_model}`` references), or ``group_name`` for
local weight paths; ``unknown`` when there is no config.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

import yaml

from ...core.table import TurnRecord
from ...records import GameRecord, Records, StudyRecord
from .commons import Commons
from .config import agent_roles, CommonsConfig
from .scenario import get_scenario

SCENARIOS = {"fishing": ("fishery", "en"), "fishing_japanese": ("fishery", "ja"), "sheep": ("pasture", "en"), "pollution": ("pollution", "en"), "trash": ("trash", "en")}
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def _config(run_dir: Path) -> dict[str, Any] | None:
    for candidate in (run_dir / ".hydra" / "config.yaml", run_dir / "config.yaml"):
        if candidate.exists():
            data = yaml.safe_load(candidate.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else None
    return None


def _model_name(path: Any, group: str | None) -> str:
    path = str(path)
    if path.startswith("/"):
        m = re.search(r"models--([^/]+)", path)
        if group:
            return group
        return m.group(1).replace("--", "/") if m else Path(path).name
    return path


def _models(cfg: dict[str, Any] | None, n: int) -> list[str]:
    if not cfg:
        return ["unknown"] * n
    group = cfg.get("group_name") or None
    mix = cfg.get("mix_llm")
    if mix:
        out = []
        for entry in mix:
            ref = str(entry.get("llm", "")) if isinstance(entry, dict) else str(entry)
            m = re.fullmatch(r"\$\{(\w+)\}", ref)
            target = cfg.get(m.group(1), {}) if m else entry.get("llm", {})
            out.append(_model_name(target.get("path", "unknown") if isinstance(target, dict) else target, None))
        return (out + [out[-1]] * n)[:n]
    path = (cfg.get("llm") or {}).get("path", "unknown")
    if isinstance(path, list):
        names = [_model_name(p, None) for p in path]
        return (names + [names[-1]] * n)[:n]
    return [_model_name(path, group)] * n


def _scenario(cfg: dict[str, Any] | None, run_dir: Path, records: list[dict[str, Any]]) -> tuple[str, str]:
    key = ((cfg or {}).get("experiment") or {}).get("scenario")
    if key in SCENARIOS:
        return SCENARIOS[key]
    parts = "/".join(run_dir.parts).lower()
    language = "ja" if any(_CJK.search(r.get("utterance") or "") for r in records) else "en"
    for word, (scenario, _) in (("trash", SCENARIOS["trash"]), ("sheep", SCENARIOS["sheep"]), ("pollution", SCENARIOS["pollution"]), ("fishing", SCENARIOS["fishing"])):
        if word in parts:
            return scenario, language
    return "fishery", language


def _universalization(cfg: dict[str, Any] | None) -> bool:
    exp = (cfg or {}).get("experiment") or {}
    return bool((exp.get("env") or {}).get("inject_universalization")) or bool(((exp.get("agent") or {}).get("act") or {}).get("universalization_prompt"))


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


def load_run(log: Path, root: Path) -> tuple[dict[str, Any], list[str]]:
    """One run as (its :class:`GameRecord`'s fields of the play: config, seats, seed, outcome,
    metrics, turn_records; problems): the agents from the harvest records, the configuration
    and seats from the config file, then the months from the records round by round."""
    records = json.loads(log.read_text(encoding="utf-8"))
    run_dir = log.parent
    cfg = _config(run_dir)
    rel = str(run_dir.relative_to(root)) if run_dir != root else run_dir.name
    role_of = _agents(records, rel)
    roles = list(agent_roles(len(role_of)))
    has_limit = any(r["action"] == "conversation_resource_limit" for r in records)
    config = _game_config(cfg, run_dir, records, len(roles), has_limit)
    models = _models(cfg, len(roles))
    names = _persona_names(cfg, role_of)
    months, turns, problems = _months(records, role_of, roles, config, names, rel)
    outcome = _outcome(config, months, names, roles, rel, models, problems)
    fields = {
        "config": config.model_dump(mode="json"),
        "seats": _seats(cfg, roles, models, has_limit),
        "seed": int((cfg or {}).get("seed", 0) or 0),
        "outcome": outcome,
        "metrics": Commons(config, None).metrics(outcome),  # metrics only: no prompts needed
        "turn_records": turns,
    }
    return fields, problems


def _agents(records: list[dict[str, Any]], rel: str) -> dict[str, str]:
    """Each harvesting persona's role (``persona_i`` → ``agent_i``), in seat order; ValueError
    for fewer than two or ids that are not ``persona_0..persona_{n-1}``."""
    personas = sorted({r["agent_id"] for r in records if r["action"] == "harvesting"}, key=lambda a: int(a.split("_")[-1]))
    n = len(personas)
    if n < 2:
        raise ValueError(f"{rel}: fewer than two harvesting agents")
    role_of = {p: f"agent_{int(p.split('_')[-1])}" for p in personas}
    if sorted(role_of.values()) != sorted(agent_roles(n)):
        raise ValueError(f"{rel}: persona ids are not persona_0..persona_{n - 1}")
    return role_of


def _game_config(cfg: dict[str, Any] | None, run_dir: Path, records: list[dict[str, Any]], n: int, has_limit: bool) -> CommonsConfig:
    """The run's configuration: scenario and language, horizon, chat length and
    universalization from the config file (the defaults without one); a limit extractor when
    the records hold extracted limits."""
    scenario, language = _scenario(cfg, run_dir, records)
    experiment = (cfg or {}).get("experiment") or {}
    return CommonsConfig(
        scenario=scenario,
        language=language,
        n_agents=n,
        months=_horizon(cfg),
        max_conversation_steps=int(((experiment.get("agent") or {}).get("converse") or {}).get("max_conversation_steps", 10)),
        universalization=_universalization(cfg),
        summariser=has_limit,
    )


def _horizon(cfg: dict[str, Any] | None) -> int:
    return int((((cfg or {}).get("experiment") or {}).get("env") or {}).get("max_num_rounds", 12))


def _seats(cfg: dict[str, Any] | None, roles: list[str], models: list[str], has_limit: bool) -> dict[str, str]:
    """Each agent's model; the limit extractor's (``framework_model``, else the first agent's)."""
    seats = {r: models[i] for i, r in enumerate(roles)}
    if has_limit:
        fw = (cfg or {}).get("framework_model")
        seats["manager"] = _model_name(fw.get("path"), None) if isinstance(fw, dict) else models[0]
    return seats


def _persona_names(cfg: dict[str, Any] | None, role_of: dict[str, str]) -> dict[str, str]:
    """The agents' names the config file gives (``experiment.personas``); the utterances add
    the others."""
    names: dict[str, str] = {}
    for p, v in ((((cfg or {}).get("experiment") or {}).get("personas")) or {}).items():
        if isinstance(v, dict) and p in role_of:
            names[role_of[p]] = v.get("name", p)
    return names


def _months(records: list[dict[str, Any]], role_of: dict[str, str], roles: list[str], config: CommonsConfig, names: dict[str, str], rel: str) -> tuple[list[dict[str, Any]], list[TurnRecord], list[str]]:
    """The months from the records, round by round (harvests, chat, extracted limit) with their
    turns, until a round without pool values or a collapse by our rule; the problems found."""
    spec = get_scenario(config.scenario, config.language)
    rounds = sorted({r["round"] for r in records if r["action"] == "harvesting"})
    months: list[dict[str, Any]] = []
    turns: list[TurnRecord] = []
    problems: list[str] = []

    def turn(role: str, phase: str, raw: str, action: dict[str, Any] | None, metrics: dict[str, float] | None = None) -> None:
        turns.append(TurnRecord(len(turns), role, phase, [], raw, action, True, 0, None, 0, 0, 0.0, 0.0, True, metrics or {}))

    for k, rnd in enumerate(rounds):
        recs = [r for r in records if r["round"] == rnd]
        harvests = [r for r in recs if r["action"] == "harvesting"]
        before = _num(harvests[0]["resource_in_pool_before_harvesting"])
        after = _num(harvests[0]["resource_in_pool_after_harvesting"])
        if before is None or after is None:
            problems.append(f"{rel}: month {k + 1} has no pool values; run cut there")
            break
        requested = {role_of[r["agent_id"]]: _num(r["wanted_resource"]) or 0.0 for r in harvests}
        collected = {role_of[r["agent_id"]]: _num(r["resource_collected"]) or 0.0 for r in harvests}
        if abs((before - after) - sum(collected.values())) > 1e-6:
            problems.append(f"{rel}: month {k + 1}: collected {sum(collected.values())} != {before} - {after}")
        for r in roles:
            turn(r, "harvest", f"Answer: {requested.get(r, 0):g}", {"amount": requested.get(r, 0)}, {"month": k + 1, "requested": requested.get(r, 0), "collected": collected.get(r, 0), "stock_before": before, "stock_after": after})
        discussion = []
        limit = None
        for r in recs:
            if r["action"] == "utterance" and r["agent_id"] in role_of:
                role = role_of[r["agent_id"]]
                names.setdefault(role, r.get("agent_name") or role)
                discussion.append({"speaker": role, "name": r.get("agent_name"), "message": r.get("utterance") or "", "proposed_limit": None, "end": False, "valid": True})
                turn(role, "discuss", r.get("utterance") or "", {"message": r.get("utterance") or ""}, {"month": k + 1})
            elif r["action"] == "conversation_resource_limit":
                limit = _num(r.get("resource_limit"))
                turn("manager", "summary", f"Answer: {limit:g}" if limit is not None else "", {"limit": limit}, {"month": k + 1})
        collapsed = spec.collapsed(after, config.collapse_rule)
        months.append({
            "month": k + 1,
            "stock_before": before,
            "sustainable_total": spec.sustainable_total(before),
            "requested": requested,
            "valid": {r: None for r in roles},
            "collected": collected,
            "stock_after": after,
            "collapsed": collapsed,
            "discussion": discussion,
            "agreed_limit": limit if limit else None,
        })
        if collapsed:
            if k + 1 < len(rounds):
                problems.append(f"{rel}: collapse (by our rule) in month {k + 1} but {len(rounds)} months logged; later months ignored")
            break
    return months, turns, problems


def _outcome(config: CommonsConfig, months: list[dict[str, Any]], names: dict[str, str], roles: list[str], rel: str, models: list[str], problems: list[str]) -> dict[str, Any]:
    """The played game's outcome shape; a run that stops before the horizon without a collapse
    is censored (a problem added)."""
    spec = get_scenario(config.scenario, config.language)
    horizon = config.months
    collapsed = bool(months and months[-1]["collapsed"])
    complete = collapsed or len(months) >= horizon
    if not complete:
        problems.append(f"{rel}: incomplete run ({len(months)} of {horizon} months, no collapse by our rule): censored")
    return {
        "scenario": config.scenario,
        "language": config.language,
        "inverse": spec.inverse,
        "names": {r: names.get(r, r) for r in roles},
        "months": months,
        "months_played": len(months),
        "collapsed": collapsed,
        "complete": complete,
        # Reason: a log that stops before the horizon without a collapse was cut off (a crash or
        # a stopped job), so its survival time is a lower bound, never a failure.
        "censored": not complete,
        "final_stock": months[-1]["stock_after"] if months else spec.initial,
        "source_path": rel,
        "mixed_models": len(set(models)) > 1,
    }


def import_logs(folder: Path, study: str) -> Records:
    """Every ``log_env.json`` under ``folder`` as records (see :mod:`agorabench.records`): the
    study's row, one :class:`GameRecord` per run, a problem string per run not imported."""
    folder = Path(folder)
    logs = sorted(folder.rglob("log_env.json"))
    yield StudyRecord(study, "commons", {"name": study, "game": "commons", "source": "import:govsim", "folder": str(folder)})
    for log in logs:
        try:
            fields, issues = load_run(log, folder)
        except (ValueError, KeyError, TypeError, json.JSONDecodeError, yaml.YAMLError) as exc:
            yield f"{log}: not imported: {exc}"
            continue
        yield from issues
        ident = hashlib.sha256(f"{study}:{fields['outcome']['source_path']}".encode()).hexdigest()[:24]
        yield GameRecord(id=ident, study=study, game="commons", prompt_version="import:govsim", source="import:govsim", started=time.time(), **fields)
    if not logs:
        yield f"no log_env.json under {folder}"
