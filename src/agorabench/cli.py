"""Command line: ``agora run | report | export | show | import | profile | serve | migrate | analyze``.

Errors in what the user gave (a malformed study file, an unknown model, a missing database)
and failures of the database or the file system end with a one-line message and exit status 2,
never a traceback. ``report``, ``export``, ``show`` and ``analyze`` open the database read-only
and cover the games of the study file's current design: its grid under every seating the study
was run with (:mod:`agorabench.core.coverage`; ``--all``: every game stored for the study). One
that would cover nothing is an error saying why.
"""

from __future__ import annotations

import argparse
import collections
import signal
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

from . import __version__, families
from .core.errors import StudyError
from .core.progress import tier_text


def load_study(path: str, **kwargs: Any):
    """:func:`agorabench.core.study.load_study`, imported when a command reads a study (the schema,
    pydantic and the game rules cost ``agora --help`` and ``agora games`` nothing)."""
    from .core.study import load_study

    return load_study(path, **kwargs)


def _default_db(study_path: str) -> str:
    return str(Path("runs") / (Path(study_path).stem + ".db"))


def _planned_study(args: argparse.Namespace):
    """The study of ``run`` / ``plan``, checked as a run checks it before touching a database."""
    from .core.coverage import one_model_for_pairs

    study = load_study(args.study, models=args.model)
    problem = one_model_for_pairs(study) if args.model else None
    if problem:
        raise StudyError(problem)
    study.check_size()  # a design without games, or too large, is an error before any database is touched
    return study


def _show_plan(study, db: str, samples: int, output_tokens: float | None, money: float | None = None, tokens: int | None = None, batch: bool = False, judged: list | None = None) -> int:
    """Print what a run of ``study`` on ``db`` would play and use (nothing is played, the
    database is only read, never created); with a budget, how many games fit it; ``batch``:
    as ``agora run --batch`` would play it; ``judged``: judge passes (``agora plan --judge``),
    each its own line after the run's, then both together."""
    from .core.plan import plan_study

    plan, spent = plan_study(study, db, samples=samples, output_tokens=output_tokens, batch=batch)
    for line in plan.lines():
        print(line)
    if judged:
        from .judging.planned import judge_lines

        for line in judge_lines(plan, judged):
            print(line)
    if money is not None or tokens is not None:
        fits = plan.games_within(money, tokens, spent)
        limit = _budget_text(money, tokens)
        print(f"budget {limit}: {fits:,} of the {plan.todo:,} game(s) fit at their estimates (the study has spent {_spent_text(money, tokens, *spent)} in this database)")
        free = [n for n in sorted(plan.models) if n in study.models and not (study.models[n].price_input or study.models[n].price_output)]
        if money is not None and free and plan.todo:  # as `agora run --budget` says it
            print(f"agora: note: the money budget counts nothing for {', '.join(repr(n) for n in free)} (no prices); a token budget caps every model", file=sys.stderr)
    for line in plan.warnings:
        print(f"agora: warning: {line}", file=sys.stderr)
    return 0


def _budget_text(money: float | None, tokens: int | None) -> str:
    """A budget as given: dollars to the cent (more digits where it has them), tokens."""
    dollars = "" if money is None else (f"${money:,.2f}" if round(money, 2) == money else f"${money:,.6g}")
    return " and ".join(x for x in (dollars, f"{tokens:,} tokens" if tokens is not None else "") if x)


def _spent_text(money: float | None, tokens: int | None, cost: float, used: int) -> str:
    shown = [f"${cost:,.4f}"] if money is not None else []
    if tokens is not None or money is None:
        shown.append(f"{used:,} tokens")
    return " and ".join(shown)


def _judge_asked(args: argparse.Namespace) -> bool:
    """Whether any of the judge pass's options (``_judge_options``) was given."""
    return bool(args.judge or args.taxonomy or args.kind or args.judge_price_input is not None or args.judge_price_output is not None)


def _judged(args: argparse.Namespace, study, db: str) -> list | None:
    """The judge passes ``--judge``/``--taxonomy`` ask to price (``plan``, ``run --dry-run``), or None."""
    if not _judge_asked(args):
        return None
    if not (args.judge and args.taxonomy):
        raise StudyError("--judge and --taxonomy go together (the judge pass to price: its model and its taxonomy)")
    from .judging.planned import judge_plans

    prices = {k: v for k, v in (("price_input", args.judge_price_input), ("price_output", args.judge_price_output)) if v is not None}
    return judge_plans(study, db, args.judge, args.taxonomy, args.kind, args.samples, args.output_tokens, prices)


def cmd_plan(args: argparse.Namespace) -> int:
    """Print per model the games, calls, tokens and money a run would use, and the basis."""
    study = _planned_study(args)
    db = args.db or _default_db(args.study)
    return _show_plan(study, db, args.samples, args.output_tokens, batch=args.batch, judged=_judged(args, study, db))


def cmd_run(args: argparse.Namespace) -> int:
    import gc

    # the imports allocate some 10^5 objects that live as long as the process; the collector's
    # passes over them while they load find nothing (about 0.05 s of CPU a run)
    collecting = gc.isenabled()
    gc.disable()
    try:
        from .core.runner import Budget, run_study
    finally:
        if collecting:
            gc.enable()
    from .redact import redact

    if _judge_asked(args) and not args.dry_run:
        raise StudyError("--judge, --taxonomy and --kind price a judge pass with --dry-run only: a run judges nothing (judge its messages after it with `agora judge`)")
    study = _planned_study(args)
    db = args.db or _default_db(args.study)
    if args.dry_run:  # what the run would play and use; nothing is played, no key is needed
        return _show_plan(study, db, args.samples, args.output_tokens, args.budget, args.budget_tokens, batch=args.batch, judged=_judged(args, study, db))
    study.check_keys()
    budget = Budget(args.budget, args.budget_tokens, args.output_tokens, args.samples) if args.budget is not None or args.budget_tokens is not None else None
    if args.no_cache and args.cache:
        raise StudyError("--no-cache and --cache exclude each other")
    if args.executor in ("ray", "processes"):
        if budget is not None:
            raise StudyError(f"--budget and --budget-tokens work with the async executor only (leave out --executor {args.executor})")
        if args.batch:
            raise StudyError(f"--batch works with the async executor only (leave out --executor {args.executor})")
        return _run_shares(args, study.name, db)
    stats, info = run_study(study, db, concurrency=args.concurrency, cache_db=args.cache, progress=not args.quiet, probe=not args.no_probe, use_cache=not args.no_cache, budget=budget, batch=args.batch)
    elsewhere = f", {stats.claimed_elsewhere} being played by another process" if stats.claimed_elsewhere else ""
    print(
        f"study {study.name}: {stats.total} games, {stats.skipped} already done, {stats.done} played, {stats.errors} errors{f' ({stats.budget_stopped} stopped by the budget)' if stats.budget_stopped else ''}{elsewhere}; "
        f"{info['calls']} model calls{_agent_calls(info)}, {info['cache_hits']} cache hits, {info['tokens']} tokens"
        + (f" ({info['cached_tokens']} prompt-cached)" if info.get("cached_tokens") else "")
        + (f", {info['rate_limited']} rate limits ({info['backoffs']} backoffs)" if info.get("rate_limited") else "")
        + (f", reasoning {info['reasoning']}" if info.get("reasoning") else "")
        + f", ${info['cost']:.4f}{tier_text(info.get('by_tier'))}; db {redact(db)}"
    )
    batched = info.get("batch")
    if batched:  # batch mode: its rounds and the provider batches they took
        extra = [f"{batched[k]} {what}" for k, what in (("followed", "batch(es) of an earlier run followed"), ("retried", "request(s) asked again"), ("failed", "request(s) failed")) if batched.get(k)]
        print(f"batch: {batched['rounds']} round(s), {batched['batches']} provider batch(es) of {batched['items']} request(s)" + "".join(f", {x}" for x in extra))
    spent = info.get("budget")
    if spent is not None:  # one line: what the study has spent of its budget, and whether it stopped the run
        limit = _budget_text(spent["money"], spent["tokens"])
        total = _spent_text(spent["money"], spent["tokens"], spent["spent_cost"], spent["spent_tokens"])
        this_run = _spent_text(spent["money"], spent["tokens"], spent["spent_cost"] - spent["before_cost"], spent["spent_tokens"] - spent["before_tokens"])
        left = stats.total - stats.skipped - stats.done
        over = _over_budget(spent)
        replayed = "" if args.no_cache else ", their answers so far from the response cache"
        refused = f"; {stats.budget_stopped:,} game(s) in flight stopped at a call that could have passed it (stored as errors, played again by the next run{replayed})" if stats.budget_stopped else ""
        if over:
            ran = spent["spent_cost"] > spent["before_cost"] or spent["spent_tokens"] > spent["before_tokens"]
            why = "the calls in flight when it was reached used more than they were held at (input at characters / 4, output at the model's mean reply so far)" if ran else "the study had spent more than the budget before this run"
            print(f"budget exceeded: spent {total} of {limit} ({this_run} in this run), over by {over}: {why}; no call was made past it{refused}; {left:,} game(s) left to play", file=sys.stderr)
        elif spent["reached"]:
            print(
                f"budget reached: spent {total} of {limit} ({this_run} in this run); no new game was started once the next could exceed the budget{refused}; "
                f"{left:,} game(s) left to play (run again with a higher budget to play them)"
            )
        else:
            # not reached: what the study has spent against the cap, said as such (games left ended in errors, listed below)
            print(f"budget {limit}: spent {total} of {limit} ({this_run} in this run); not reached" + (f"; {left:,} game(s) left to play (their errors below)" if left else ""))
    for warning in info.get("warnings", []):
        print(f"  warning: {warning}", file=sys.stderr)
    for name, why in info.get("stopped", {}).items():  # one line per stopped model, not one per game
        print(f"  model {name!r} stopped: {why}", file=sys.stderr)
    stopped = set(info.get("stopped", {}).values())
    shown = collections.Counter(m for m in stats.error_messages if not any(why in m or _quoted_in(m, why) for why in stopped))
    for message, n in list(shown.items())[:5]:
        print(f"  error{f' ({n} games)' if n > 1 else ''}: {message}", file=sys.stderr)
    if spent is not None and _over_budget(spent):
        return 1
    return 0 if stats.errors == stats.budget_stopped else 1


def _quoted_in(message: str, why: str) -> bool:
    """Whether a game's error is the bad request a model's stop line quotes (the same 400 in a
    row that stopped the model, :data:`~agorabench.models.model.STOP_AFTER_REFUSED`): its
    ``HTTP NNN: ...`` part, before the attempts, is in the line."""
    start, end = message.find("HTTP "), message.rfind(" (after ")
    return 0 <= start < end and " ".join(message[start:end].split()) in why


def _over_budget(spent: dict[str, Any]) -> str:
    """By how much a run's study spent past its budget (money and/or tokens), in words; "" when
    within it."""
    over = []
    if spent["money"] is not None and spent["spent_cost"] > spent["money"] + 1e-12:
        over.append(f"${spent['spent_cost'] - spent['money']:,.4f}")
    if spent["tokens"] is not None and spent["spent_tokens"] > spent["tokens"]:
        over.append(f"{spent['spent_tokens'] - spent['tokens']:,} tokens")
    return " and ".join(over)


def _run_shares(args: argparse.Namespace, name: str, db: str) -> int:
    """A run spread over shares: Ray workers (``--executor ray``) or local processes
    (``--executor processes``); one summary line, and exit status 1 when a share failed."""
    from .core.executors import run_processes, run_ray
    from .models.embedded import usable_cores
    from .redact import redact

    ray = args.executor == "ray"
    workers = args.workers if args.workers is not None else (4 if ray else usable_cores())
    if workers < 1:
        raise StudyError("--workers must be at least 1")
    if ray:
        if args.worker_retries < 0:
            raise StudyError("--worker-retries must be 0 or more")
        counts, info = run_ray(args.study, db, models=args.model, workers=workers, address=args.address, concurrency=args.concurrency, cache_db=args.cache, retries=args.worker_retries, use_cache=not args.no_cache, probe=not args.no_probe)
    else:
        counts, info = run_processes(args.study, db, models=args.model, workers=workers, concurrency=args.concurrency, cache_db=args.cache, use_cache=not args.no_cache, probe=not args.no_probe)
    elsewhere = f", {counts['elsewhere']} being played by another process" if counts["elsewhere"] else ""
    print(
        f"study {name}: {counts['total']} games, {counts['skipped']} already done, {counts['played']} played, {counts['errors']} errors{elsewhere}; "
        f"{info['calls']} model calls{_agent_calls(info)}, {info['cache_hits']} cache hits, {info['tokens']} tokens, ${info['cost']:.4f}; db {redact(db)}; "
        + (f"ray workers {info['workers']}" if ray else f"processes {info['workers']}")
    )
    for message in info["error_messages"][:5]:
        print(f"  error: {message}", file=sys.stderr)
    if counts["failed"]:
        print(
            f"agora: error: {len(counts['failed'])} {'Ray' if ray else 'process'} share(s) failed ({redact(counts['failed'][0])}); "
            f"{counts['not_played']} game(s) not played, the finished ones are stored: run the same command again to play the rest",
            file=sys.stderr,
        )
        return 1
    return 0 if counts["errors"] == 0 else 1


def _store(args: argparse.Namespace):
    """The study's database, opened read-only (creates nothing)."""
    from .store.store import Store

    study = str(args.study)
    if study.endswith((".toml", ".yaml", ".yml")) and not Path(study).exists():  # a mistyped path, not a missing run
        raise StudyError(f"study file not found: {study}")
    db = args.db or _default_db(args.study)
    if "://" not in db and not Path(db).exists():
        raise StudyError(f"database not found: {db} (run the study first, or pass --db)")
    return Store(db, read_only=True)


def _agent_calls(info: dict) -> str:
    """`` (and 12 outside-agent requests)`` when the run asked outside agents (``http/URL``):
    they are no model calls, but they are calls."""
    n = info.get("agent_calls") or 0
    return f" and {n} outside-agent request{'s' if n != 1 else ''}" if n else ""


def _require_study(store, name: str, db: str) -> None:
    """A study with no stored games is an error naming the studies the database does hold."""
    if store.game_ids(name):
        return
    held = sorted({g["study"] for g in store.games()})
    raise StudyError(f"no games of study {name!r} in {db}" + (f" (it holds: {', '.join(held)})" if held else " (it holds no games)"))


def _scope(args: argparse.Namespace, store) -> tuple[str, set[str] | None, int, dict | None]:
    """Study name, the game ids to cover (None: all stored), how many stored games that leaves
    out, and the study as a dict (the study file, or the stored one) whose ``models`` are those
    of every seating in scope. A study without stored games is an error. A study file limits
    the games to its current design (its grid under its own seating and every seating it was
    run with: ``--model``, the dashboard, participants) unless ``--all``; if that leaves no
    game, the error says how many are outside."""
    from .core.coverage import design
    from .web.participants import participant_games

    db = args.db or _default_db(args.study)
    study = load_study(args.study) if Path(args.study).exists() else None
    name = study.name if study else args.study
    _require_study(store, name, db)
    if study is None:
        return name, None, 0, store.study_spec(name) or None
    runs = store.recorded_runs(name)
    spec = study.file.model_dump(mode="json")
    if getattr(args, "all", False):
        spec["models"] = _merged(spec["models"], [m for r in runs for m in r.get("models") or []])
        return name, None, 0, spec
    stored = store.game_ids(name)
    ids, models = design(study, runs, stored)
    ids |= {game for game, base in participant_games(store, name).items() if base in ids}
    spec["models"] = _merged(models, spec["models"])
    covered = stored & ids
    if not covered:
        raise StudyError(
            f"all {len(stored)} stored game(s) of study {name!r} are outside the study file's current design "
            f"(its grid or models were changed since they were played); --all includes them"
        )
    return name, ids, len(stored - ids), spec


def _merged(first: list[dict], more: list[dict]) -> list[dict]:
    """Model entries by name, the first of each name kept."""
    out: dict[str, dict] = {}
    for entry in [*first, *more]:
        out.setdefault(entry["name"], entry)
    return list(out.values())


def _left_out(n: int) -> None:
    if n:
        print(f"left out {n} stored game(s) that are not in the study file's current design (--all includes them)", file=sys.stderr)


def _own_files(args: argparse.Namespace) -> list[tuple[Path, str]]:
    """The files a reading command must never write over, each with what it is: its SQLite
    database(s) with their ``-wal`` / ``-shm`` / ``-journal`` files (the response cache of these
    commands is the database itself) and the study file."""
    from .analysis.files import sqlite_companions

    named = getattr(args, "db_or_study", None)  # agora profile: databases, or studies
    dbs = _profiled(args)[0] if named else [args.db or (_default_db(args.study) if getattr(args, "study", None) else None)]
    own = [(p, "the database" if p == Path(db) else f"a file of the database {db}") for db in dbs if db and "://" not in db for p in sqlite_companions(db)]
    for study in named or [getattr(args, "study", None)]:
        if study and str(study).endswith((".toml", ".yaml", ".yml")) and Path(study).is_file():
            own.append((Path(study), "the study file"))
    return own


def _refuse_own_files(args: argparse.Namespace, *names: str) -> list[tuple[Path, str]]:
    """A ``--out`` that is (symlinks followed) the database, its ``-wal`` / ``-shm``, the cache
    or the study file, or a folder in which the command would write one of ``names`` over one of
    them, is an error before anything is read; returns the files to protect while writing."""
    from .analysis.files import refusal

    own = _own_files(args)
    out = Path(args.out)
    for target in [out, *(out / n for n in names)] if names else [out]:
        why = refusal(target, own)
        if why:
            raise StudyError(f"--out {args.out}: refused, {why}")
    return own


def _check_out_file(out: str) -> None:
    path = Path(out)
    if path.is_dir():
        raise StudyError(f"--out {out} is a folder; give a file name")
    if not path.parent.is_dir():
        raise StudyError(f"--out {out}: folder {path.parent} does not exist")


def cmd_report(args: argparse.Namespace) -> int:
    from .analysis.report import build_report

    from .analysis.files import protecting

    own = _refuse_own_files(args, "index.html")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise StudyError(f"--out {args.out} is a file; the report needs a folder (it writes OUT/index.html)")
    store = _store(args)
    name, ids, left_out, spec = _scope(args, store)
    try:
        with protecting(p for p, _ in own):
            path = build_report(store, name, args.out, spec=spec, ids=ids, left_out=left_out)
    except ValueError as exc:
        raise StudyError(str(exc)) from None
    _left_out(left_out)
    print(f"report: {path.resolve()}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .analysis.frames import export

    from .analysis.files import protecting

    own = _refuse_own_files(args)
    _check_out_file(args.out)
    store = _store(args)
    name, ids, left_out, spec = _scope(args, store)
    try:
        with protecting(p for p, _ in own):
            n = export(store, name, args.table, args.format, args.out, ids=ids, spec=spec)
    except ValueError as exc:
        raise StudyError(str(exc)) from None
    _left_out(left_out)
    if args.table == "participants" and n == 0:  # not an error: a study no person took part in
        print(f"study {name!r} has no participants (it was never served, or nobody entered): no participants file written")
        return 0
    print(f"wrote {n} rows to {args.out}")
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    """Code the study's stored messages with an LLM judge against a taxonomy (``agorabench.judging``)."""
    from .judging.command import judge_command

    store = _store(args)
    try:
        name, ids, left_out, _ = _scope(args, store)
    finally:
        store.dispose()
    _left_out(left_out)
    models = load_study(args.study).models if Path(args.study).exists() else None
    return judge_command(args, name, ids, args.db or _default_db(args.study), models)


def cmd_show(args: argparse.Namespace) -> int:
    """Print one game's transcript per role (``--first-invalid``: the first game with an invalid
    turn; ``--model``: only that model's roles, and a game it plays)."""
    from .analysis.transcript import render_game

    store = _store(args)
    name, ids, _, _ = _scope(args, store)
    games = [g for g in store.games(name) if ids is None or g["id"] in ids]
    games.sort(key=lambda g: (g.get("started") or 0.0, g["id"]))
    if args.model:
        games = [g for g in games if args.model in (g["seats"] or {}).values()]
    if args.game_id:
        games = [g for g in games if g["id"].startswith(args.game_id)]
    if args.first_invalid:
        invalid_ids = {t["game_id"] for t in store.turns(name) if not t["valid"] and (not args.model or (t["role"] in _roles_of(games, t["game_id"], args.model)))}
        games = [g for g in games if g["id"] in invalid_ids]
    if not games:
        what = f"game {args.game_id!r}" if args.game_id else "game"
        raise StudyError(f"no {what} in study {name!r}" + (f" played by {args.model!r}" if args.model else "") + (" with an invalid turn" if args.first_invalid else ""))
    if args.game_id and len({g["id"] for g in games}) > 1 and not args.first_invalid:
        raise StudyError(f"game id prefix {args.game_id!r} matches {len(games)} games; give more characters")
    game = games[0]
    roles = {r for r, m in (game["seats"] or {}).items() if m == args.model} if args.model else None
    print(render_game(game, store.turns(game_id=game["id"]), roles))
    return 0


def _roles_of(games: list[dict], game_id: str, model: str) -> set[str]:
    for g in games:
        if g["id"] == game_id:
            return {r for r, m in (g["seats"] or {}).items() if m == model}
    return set()


def cmd_analyze(args: argparse.Namespace) -> int:
    """Print the analysis (and write its CSVs with ``--out``). When a seated model was run with
    a reasoning effort, the text ends with each model's effort and every CSV it wrote that names
    models gets ``effort`` / ``effort_<role>`` beside them (the analyses key on the model's name,
    ``NAME-EFFORT``)."""
    from .analysis.files import protecting, staged
    from .analysis.frames import games_df
    from .analysis.reasoning import add_efforts_to_csv, efforts
    from .analysis.report import named_models_only

    analyze = families.analyzer(args.kind)
    store = _store(args)
    name, ids, left_out, spec = _scope(args, store)
    _left_out(left_out)
    spec = spec or {}
    games = named_models_only(games_df(store, name, ids=ids), spec)
    if games.empty:
        raise StudyError(f"no finished games stored for study {name!r}")
    seated = {str(m) for c in games.columns if str(c).startswith("model_") for m in games[c].dropna()}
    found = {m: e for m, e in efforts(spec).items() if m in seated}
    folder = Path(args.out) if args.out else None
    written = {p: p.stat().st_mtime_ns for p in folder.glob("*.csv")} if folder is not None and folder.is_dir() else {}
    try:
        with staged(), protecting(p for p, _ in _own_files(args)):  # the CSVs are renamed into place together once the analysis is done
            text = analyze(games, spec, out=args.out, reference=args.reference, reps=args.reps)
    except ValueError as exc:  # (a failed write is an OutputError, an OSError: main says which file)
        raise StudyError(str(exc)) from None
    if found:
        import pandas as pd

        table = pd.DataFrame(sorted(found.items()), columns=["model", "effort"]).to_string(index=False)
        text += f"\n\n== reasoning effort per model ==\n{table}"
        for path in sorted(folder.glob("*.csv")) if folder is not None and folder.is_dir() else []:
            if written.get(path) != path.stat().st_mtime_ns:  # a file this analysis wrote
                add_efforts_to_csv(path, found)
    print(text)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from .store.store import Store

    import_logs = families.importer(args.format)
    folder = Path(args.folder)
    if not folder.is_dir():
        raise StudyError(f"not a folder: {folder}")
    study = args.study or f"{args.format}_import"
    store = Store(args.db or str(Path("runs") / f"{args.format}_import.db"))
    n, problems = store.save_records(import_logs(folder, study))
    print(f"imported {n} games into study {study}")
    for p in problems[:20]:
        print(f"  warning: {p}", file=sys.stderr)
    return 0


def _profiled(args: argparse.Namespace) -> tuple[list[str], list[str | None]]:
    """The databases of ``agora profile`` and per database the one study to read (None: all).
    With ``--db``, every name given is a study (a study file or a stored name) in that
    database, as ``report`` takes it; without, a study file reads its study in its own
    database (``runs/<stem>.db``) and anything else is a database read whole."""
    studies = [str(s) for s in args.db_or_study]
    if args.db:
        return [args.db] * len(studies), [load_study(s).name if Path(s).exists() and s.endswith((".toml", ".yaml", ".yml")) else s for s in studies]
    dbs: list[str] = []
    names: list[str | None] = []
    for item in studies:
        if item.endswith((".toml", ".yaml", ".yml")):
            if not Path(item).exists():
                raise StudyError(f"study file not found: {item}")
            dbs.append(_default_db(item))
            names.append(load_study(item).name)
        else:
            dbs.append(item)
            names.append(None)
    return dbs, names


def cmd_profile(args: argparse.Namespace) -> int:
    from .analysis.profile import build_profile

    from .analysis.files import protecting

    own = _refuse_own_files(args, "profile.html", "profile.csv")
    dbs, studies = _profiled(args)
    missing = [db for db in dbs if "://" not in db and not Path(db).exists()]
    if missing:
        raise StudyError(f"database not found: {missing[0]}" + (" (run the study first, or pass --db)" if any(studies) else ""))
    if any(studies):
        from .store.store import Store

        for db, study in zip(dbs, studies):
            if study:
                _require_study(Store(db, read_only=True), study, db)
    try:
        with protecting(p for p, _ in own):
            page, table = build_profile(dbs, args.out, studies)
    except ValueError as exc:
        raise StudyError(str(exc)) from None
    print(f"profile: {page.resolve()}\nrows: {table.resolve()}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    if not args.study and not args.db:
        raise StudyError("serve needs a study file, or --db for the dashboard alone")
    try:
        from .web.app import serve
    except ModuleNotFoundError as exc:
        raise StudyError(f"the web app needs the web extra (pip install 'agorabench[web]'): {exc}") from None
    study = load_study(args.study) if args.study else None
    if args.rehearse is not None:
        return _rehearse(args, study)
    if study is not None:
        study.check_keys()
        from .web.rehearse_bonus import start_problems

        problems = start_problems(study)  # what a rehearsal would name, before anyone enters
        if problems:
            raise StudyError(f"study {study.name!r} is not ready to serve: " + "; ".join(problems) + " (agora serve --rehearse N runs these checks with simulated participants)")
    db = args.db or _default_db(args.study)
    if study is None and "://" not in db and not Path(db).exists():
        raise StudyError(f"database not found: {db}")
    serve(study, db, host=args.host, port=args.port)
    return 0


def _rehearse(args: argparse.Namespace, study) -> int:
    """``serve --rehearse N``: simulated participants through the real pages on a database of
    the rehearsal's own (``--db``, never the study's live one, or a new temporary folder); exit
    status 1 when it finds a protocol error or another error, 0 otherwise."""
    from .web.rehearse import rehearse

    if study is None:
        raise StudyError("--rehearse needs a study file")
    if args.db and "://" not in args.db and Path(args.db).resolve() == Path(_default_db(args.study)).resolve():
        raise StudyError(f"--db {args.db} is the study's live database: a rehearsal writes to a database of its own (leave out --db for a temporary one)")
    result = rehearse(study, args.rehearse, db=args.db, policy=args.rehearse_policy, idle=args.rehearse_idle, keep_models=args.rehearse_models)
    for line in result.lines():
        print(line)
    return 1 if result.failed else 0


def cmd_games(args: argparse.Namespace) -> int:
    """List the registered game families, their games and scripted strategies."""
    for family in families.families().values():
        print(f"{family.name}: {family.description}")
        for game in family.games:
            known = ", ".join(f"strategy/{s}" for s in families.strategies(game))
            print(f"  {game}" + (f"  ({known})" if known else ""))
        extras = [f"import {', '.join(family.importers)}" if family.importers else "", f"analyze {', '.join(family.analyses)}" if family.analyses else "", f"check {', '.join(family.audits)}" if family.audits else ""]
        if any(extras):
            print("  " + "; ".join(e for e in extras if e))
    return 0


def cmd_conformance(args: argparse.Namespace) -> int:
    """Run the conformance suite over the named games (default: every registered game)."""
    from .conformance import CHECKS, run

    games = args.game or families.game_names()
    for game in games:
        families.family_of(game)
    checks = args.check or list(CHECKS)
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        raise StudyError(f"unknown check {unknown[0]!r}; known: {', '.join(CHECKS)}")
    warned: list[tuple[str, str]] = []
    exempt: list[tuple[str, str]] = []
    failed = run(games, checks, warnings=warned, exempted=exempt)
    for game in games:
        bad = [(c, why) for g, c, why in failed if g == game]
        print(f"{game}: " + ("ok" if not bad else f"{len(bad)} of {len(checks)} checks failed"))
        for check, why in bad:
            print(f"  {check}: {why}")
        for why in (w for g, w in warned if g == game):
            print(f"  warning: {why}")
        for why in (w for g, w in exempt if g == game):
            print(f"  exempt: {why}")
    print(f"{len(games) * len(checks) - len(failed)} of {len(games) * len(checks)} checks passed")
    return 1 if failed else 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from .store.migrate import migrate

    if "://" not in args.db and not Path(args.db).exists():
        raise StudyError(f"database not found: {args.db}")
    n = migrate(args.db)
    print(f"migrated {n} games of {args.db} to per-role transcripts" if n else f"{args.db} already has the current layout")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Run every stored-data audit the game families register over a database (today: commons
    prompts of another agent, language or scenario, the render memo defect before prompt version
    commons-5) and list the games that fail; exit status 1 when there are any. ``--forget``
    deletes them so that the next ``run`` plays them again."""
    from .store.store import Store

    db = args.db
    if "://" not in db and not Path(db).exists():
        raise StudyError(f"database not found: {db}")
    store = Store(db, read_only=not args.forget)
    try:
        bad: list[str] = []
        for name, game, problems in families.audits():
            checked, failed, versions = 0, [], collections.Counter()
            for gid, study, config, version, transcripts in store.game_transcripts(game, args.study):
                checked += 1
                found = problems(config or {}, transcripts)
                if found:
                    failed.append(gid)
                    versions[version] += 1
                    print(f"{gid}  {study}  {version}  {found[0]}" + (f"  (+{len(found) - 1} more)" if len(found) > 1 else ""))
            if not checked:
                print(f"{name}: no {game} games stored in {db}" + (f" for study {args.study!r}" if args.study else ""))
                continue
            by_version = ", ".join(f"{v or 'unversioned'}: {n}" for v, n in sorted(versions.items()))
            print(f"{name}: {len(failed)} of {checked} {game} game(s) fail this check" + (f" ({by_version})" if failed else ""))
            bad += failed
        if bad and args.forget:
            n = store.forget_games(bad)
            print(f"deleted {n} game(s); `agora run` on the study plays them again")
            return 0
        if bad:
            print("run `agora check DB --forget` to delete them, then `agora run STUDY` to play them again", file=sys.stderr)
        return 1 if bad else 0
    finally:
        store.dispose()


class _Help(argparse.RawDescriptionHelpFormatter):
    """Help that shows each option's default (unless none, off, or already said) and keeps the
    examples' lines as written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "(default" in text or action.default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


#: Examples shown under each command's ``--help``.
EXAMPLES = {
    "run": "agora run studies/demo.toml\nagora run study.toml --model openai/gpt-4o-mini --concurrency 32\nagora run study.toml --budget 5.00   # no new game once the next could take the study past $5\nagora run study.toml --dry-run      # what it would play and cost; plays nothing\nagora run study.toml --db postgresql://user@host/db --executor ray --workers 8\nagora run study.toml --executor processes --workers 4   # four local processes, --concurrency games in flight each",
    "plan": "agora plan studies/envy_points.toml\nagora plan study.toml --model openai/gpt-4o-mini --model anthropic/claude-sonnet-4 --db runs/study.db\nagora plan studies/commons.toml --judge openai/gpt-4o-mini --taxonomy cooperation",
    "report": "agora report studies/demo.toml --out reports/demo\nagora report my_study --db runs/my_study.db --out reports/my_study --all",
    "export": "agora export studies/demo.toml --out games.csv\nagora export studies/demo.toml --table turns --format parquet --out turns.parquet\nagora export studies/web_bargaining.toml --table participants --out people.csv   # joins games on model_<role> = pseudonym",
    "judge": "agora judge studies/commons.toml --judge openai/gpt-4o-mini --taxonomy cooperation --dry-run\nagora judge studies/commons.toml --judge openai/gpt-4o-mini --taxonomy my_taxonomy.toml --agreement coded.csv\nagora judge studies/commons.toml --judge openai/gpt-4o-mini --judge anthropic/claude-haiku-4-5 --taxonomy leader_svo --kind agenda",
    "show": "agora show studies/demo.toml   # the study's first game\nagora show studies/demo.toml --model smollm2-135m   # a game of that model, its roles only\nagora show studies/demo.toml 799f28   # a game by the first characters of its id (agora export lists them)\nagora show study.toml --first-invalid   # the first game with an invalid turn (the demo has none)",
    "profile": "agora profile runs/demo.db runs/envy_points.db --out reports/profile   # one row of measures per model across both\nagora profile studies/battery.toml --db runs/battery.db --out reports/battery-profile   # one study, as report takes it",
    "serve": "agora serve studies/web_bargaining.toml --port 8000\nagora serve --db runs/web_bargaining.db   # the dashboard alone\nagora serve studies/web_bargaining.toml --rehearse 8   # 8 simulated participants, before going live",
}


def command_examples(name: str) -> str | None:
    """The examples of one command: :data:`EXAMPLES`, and for ``analyze`` and ``import`` one per
    kind and log format the registered families provide (named by the registry, not here)."""
    if name == "analyze":
        return "\n".join(f"agora analyze {kind} study.toml\nagora analyze {kind} study.toml --reference MODEL --out tables/   # the tables as CSV files too" for kind in families.analyzer_names()) or None
    if name == "import":
        return "\n".join(f"agora import {fmt} path/to/{fmt}-logs --study {fmt}_logs --db runs/{fmt}_logs.db" for fmt in families.importer_names()) or None
    return EXAMPLES.get(name)


def _sub(sub: Any, name: str, help: str) -> argparse.ArgumentParser:
    """A subcommand whose help shows defaults and, where we have them, examples."""
    examples = command_examples(name)
    return sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".", formatter_class=_Help, epilog=("examples:\n" + "\n".join("  " + line for line in examples.split("\n"))) if examples else None)


#: What ``--db`` means for the commands that read a study's games.
DB_HELP = "SQLite path or database URL (default: runs/<study>.db)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="agora", description="LLM agents in social and economic games.", formatter_class=_Help, epilog="Each command has its own --help, with examples.")
    p.add_argument("--version", action="version", version=f"agora {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    r = _sub(sub, "run", "play a study's missing games")
    r.add_argument("study", help="study file (TOML or YAML)")
    r.add_argument("--db", help=DB_HELP)
    r.add_argument("--concurrency", type=_positive, default=8, help="games in flight at once")
    r.add_argument("--model", action="append", help="model spec replacing the study's models (repeatable)")
    r.add_argument("--cache", help="database holding the response cache (default: --db)")
    r.add_argument("--no-cache", action="store_true", help="read and write no response cache: every decision is a model call")
    r.add_argument("--quiet", action="store_true", help="no progress line")
    r.add_argument("--no-probe", action="store_true", help="skip the check that each hosted model answers before the study starts")
    r.add_argument("--executor", choices=["async", "processes", "ray"], default="async", help="one process (async), local worker processes (processes) or Ray workers (ray)")
    r.add_argument("--workers", type=int, help="shares of the games, one worker each: Ray workers with --executor ray (default 4), local processes with --executor processes (default: the usable cores); --concurrency is then games in flight per worker. A local process that dies is not started again: its games are left for the next run")
    r.add_argument("--address", help="an existing Ray cluster (default: a local one for the run)")
    r.add_argument("--worker-retries", type=int, default=3, help="with --executor ray: times a share whose worker died is started again")
    r.add_argument("--dry-run", action="store_true", help="print what the run would play and use (as `agora plan`) and play nothing")
    r.add_argument("--budget", type=_amount, metavar="DOLLARS", help="the most the study may spend in this database: no new game starts once the next could exceed it (the games in flight finish)")
    r.add_argument("--budget-tokens", type=_count, metavar="N", help="as --budget, in tokens (prompt and completion, reasoning included)")
    _plan_options(r)
    _judge_options(r, "with --dry-run, ")
    r.set_defaults(func=cmd_run)

    pl = _sub(sub, "plan", "print what a study's run would play and use: per model games, calls, tokens and money, with the basis of the estimate")
    pl.add_argument("study", help="study file (TOML or YAML)")
    pl.add_argument("--db", help=DB_HELP + "; games already done in it are left out")
    pl.add_argument("--model", action="append", help="model spec replacing the study's models (repeatable)")
    _judge_options(pl)
    _plan_options(pl)
    pl.set_defaults(func=cmd_plan)

    rep = _sub(sub, "report", "write an HTML report of a study")
    rep.add_argument("study", help="study file (or study name)")
    rep.add_argument("--db", help=DB_HELP)
    rep.add_argument("--out", required=True, help="folder; the report is OUT/index.html")
    rep.add_argument("--all", action="store_true", help="every game stored for the study, not only the study file's current design")
    rep.set_defaults(func=cmd_report)

    e = _sub(sub, "export", "write games, turns or a served study's participants as CSV or Parquet")
    e.add_argument("study", help="study file (or study name)")
    e.add_argument("--db", help=DB_HELP)
    e.add_argument("--table", choices=["games", "turns", "participants", "judgements"], default="games", help="one row per game, per turn, per judged message (agora judge), or per participant of a served study (questionnaire, quiz and attention answers; joins games and turns on the seat name human:<pseudonym>)")
    e.add_argument("--format", choices=["csv", "parquet"], default="csv", help="file format")
    e.add_argument("--out", required=True, help="the file to write")
    e.add_argument("--all", action="store_true", help="every game stored for the study, not only the study file's current design")
    e.set_defaults(func=cmd_export)

    j = _sub(sub, "judge", "code a study's stored messages (chat, agendas, offers' messages) with an LLM judge against a taxonomy")
    j.add_argument("study", help="study file (or study name)")
    j.add_argument("--judge", action="append", required=True, metavar="MODEL", help="the judging model: a model of the study file by name, or a spec (openai/gpt-4o-mini, NAME@URL); twice: two judges and their agreement")
    j.add_argument("--taxonomy", required=True, help="a TOML or JSON file of categories (name, definition), or a shipped one: cooperation, leader_svo")
    j.add_argument("--db", help=DB_HELP)
    j.add_argument("--agreement", metavar="CODING.csv", help="a person's coding (columns message_id, label): Cohen's kappa and Krippendorff's alpha of each judge with it")
    j.add_argument("--kind", action="append", help="only messages of this kind (chat, agenda, leader_report, offer_message, signal_message, buy_message); repeatable")
    j.add_argument("--budget", type=float, help="dollars the judge may spend on this study and taxonomy in all; no message is started once its estimate could pass it")
    j.add_argument("--price-input", type=float, help="the judge's dollars per million prompt tokens (default: its study model entry's, else 0)")
    j.add_argument("--price-output", type=float, help="the judge's dollars per million output tokens (default: its study model entry's, else 0)")
    j.add_argument("--dry-run", action="store_true", help="print what the pass would ask and cost; ask nothing")
    j.add_argument("--concurrency", type=int, default=8, help="messages coded at once")
    j.add_argument("--max-retries", type=int, default=2, help="re-asks of a reply that is not a label")
    j.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    j.add_argument("--all", action="store_true", help="every game stored for the study, not only the study file's current design")
    j.set_defaults(func=cmd_judge)

    s = _sub(sub, "show", "print one game's transcript per role")
    s.add_argument("study", help="study file (or study name)")
    s.add_argument("game_id", nargs="?", help="game id (or its first characters)")
    s.add_argument("--db", help=DB_HELP)
    s.add_argument("--first-invalid", action="store_true", help="the first game with an invalid turn")
    s.add_argument("--model", help="only the roles of this model (and a game it plays)")
    s.add_argument("--all", action="store_true", help="look among every game stored for the study")
    s.set_defaults(func=cmd_show)
    a = _sub(sub, "analyze", "print a study's statistical analysis (GLEE regressions, Tables 5 and 6, meta-game)")
    a.add_argument("kind", choices=families.analyzer_names(), help="which family's analysis")
    a.add_argument("study", help="study file (or study name)")
    a.add_argument("--db", help=DB_HELP)
    a.add_argument("--reference", help="reference model of the identity effects (default: the study's analysis.reference_model, else its first language model that played, else its first model; the rule in docs/analysis.md, shared with the report and the Python API)")
    a.add_argument("--reps", type=int, default=200, help="bootstrap resamples of the meta-game")
    a.add_argument("--out", help="folder for the tables as CSV files")
    a.add_argument("--all", action="store_true", help="analyse every game stored for the study, not only the study file's current design")
    a.set_defaults(func=cmd_analyze)

    i = _sub(sub, "import", "load games logged by the original projects")
    i.add_argument("format", choices=families.importer_names(), help="whose logs")
    i.add_argument("folder", help="folder holding the original project's logs")
    i.add_argument("--db", help="SQLite path or database URL to import into (default: runs/<study>.db)")
    i.add_argument("--study", help="study name for the imported games")
    i.set_defaults(func=cmd_import)

    pr = _sub(sub, "profile", "one behavioural profile per model across databases (HTML + CSV)")
    pr.add_argument("db_or_study", nargs="+", metavar="DB|STUDY", help="SQLite paths or database URLs (models are matched by name), or study files (each read in runs/<stem>.db); with --db, studies (files or names) in that database")
    pr.add_argument("--db", help="the database holding the studies named (as report, export and show take it)")
    pr.add_argument("--out", required=True, help="folder; writes OUT/profile.html and OUT/profile.csv")
    pr.set_defaults(func=cmd_profile)

    sv = _sub(sub, "serve", "web app: participants play a study's human seats; researcher dashboard")
    sv.add_argument("study", nargs="?", help="study file with human seats (leave out with --db for the dashboard alone)")
    sv.add_argument("--db", help="SQLite path or database URL (default runs/<study>.db)")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (put a TLS proxy in front for the public)")
    sv.add_argument("--port", type=int, default=8000, help="port to listen on")
    sv.add_argument("--rehearse", type=_positive, metavar="N", help="rehearse instead of serving: N simulated participants go through the real pages on 127.0.0.1 (some slow, some leaving mid-game); prints pages, errors, games, bonuses and the export; exit status 1 on a protocol error. --db then names the rehearsal's own database (default: a new temporary folder)")
    sv.add_argument("--rehearse-policy", choices=["random", "first"], default="random", help="how simulated participants fill forms: random valid values, or the first option and lowest bound")
    sv.add_argument("--rehearse-idle", type=_amount, default=4.0, metavar="SECONDS", help="the idle timeout during a rehearsal (the time limit is at most twice it), so that leavers' games end quickly (default 4)")
    sv.add_argument("--rehearse-models", action="store_true", help="keep the study's language models in a rehearsal (default: a scripted strategy of the game, its random one where it has it, plays their seats; nothing is paid)")
    sv.set_defaults(func=cmd_serve)

    ck = _sub(sub, "check", "run the game families' audits of stored data (e.g. prompts that belong to another agent, language or scenario); `agora games` lists them")
    ck.add_argument("db", help="SQLite path or database URL")
    ck.add_argument("--study", help="only this study's games")
    ck.add_argument("--forget", action="store_true", help="delete the affected games so that the next run plays them again")
    ck.set_defaults(func=cmd_check)

    gm = _sub(sub, "games", "list the registered game families, games and strategies")
    gm.set_defaults(func=cmd_games)

    cf = _sub(sub, "conformance", "check that games follow the rules every game must (roles, strategies, random play, determinism, actions, report)")
    cf.add_argument("game", nargs="*", help="games to check (default: every registered game)")
    cf.add_argument("--check", action="append", help="only this check (repeatable): roles, strategies, instructions, prompts, random, deterministic, outcome, actions, report")
    cf.set_defaults(func=cmd_conformance)

    m = _sub(sub, "migrate", "upgrade a database written by an older agorabench in place")
    m.add_argument("db", help="SQLite path or database URL")
    m.set_defaults(func=cmd_migrate)
    return p


def _judge_options(p: argparse.ArgumentParser, when: str = "") -> None:
    """The options that price an ``agora judge`` pass beside the run's cost (``plan``, ``run --dry-run``)."""
    p.add_argument("--judge", action="append", metavar="MODEL", help=f"{when}also price an `agora judge` pass over the study's messages once the run is done, on its own line: a model of the study file by name (its prices), or a spec; repeatable")
    p.add_argument("--taxonomy", help="the judge pass's taxonomy (as `agora judge --taxonomy`)")
    p.add_argument("--kind", action="append", help="the judge pass codes only messages of this kind (as `agora judge --kind`); repeatable")
    p.add_argument("--judge-price-input", type=_amount, metavar="DOLLARS", help="the judge's dollars per million prompt tokens (as `agora judge --price-input`; default: its study model entry's, else 0)")
    p.add_argument("--judge-price-output", type=_amount, metavar="DOLLARS", help="the judge's dollars per million output tokens (as `agora judge --price-output`)")


def _plan_options(p: argparse.ArgumentParser) -> None:
    """The options of the cost estimate (``plan``, ``run --dry-run``, ``run --budget``)."""
    p.add_argument("--samples", type=_positive, default=2, help="sample plays per kind of game (game, configuration, scripted seats) behind the estimate")
    p.add_argument("--output-tokens", type=_amount, metavar="N", help="output tokens assumed per call (default: the bound, max_tokens plus any reasoning budget)")
    p.add_argument("--batch", action="store_true", help="play (or plan) every language model whose provider has a batch API in provider batches, at the batch price (a model entry's batch = true asks it for one model)")


def _amount(text: str) -> float:
    """A finite number, 0 or more."""
    import math

    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number, 0 or more, not {text}")
    return value


def _count(text: str) -> int:
    """A whole number, 0 or more."""
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _loaded(*names: str) -> tuple[type[BaseException], ...]:
    """The exception classes ``"module:Class"`` whose modules are imported already. A module not
    imported cannot have raised its error, so ``main`` catches them without importing any
    (sqlalchemy alone costs a tenth of a second)."""
    found = []
    for name in names:
        module, _, cls = name.partition(":")
        if module in sys.modules:
            found.append(getattr(sys.modules[module], cls))
    return tuple(found)


def main(argv: list[str] | None = None) -> int:
    from .redact import redact

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "show" and args.game_id is None and len(extra) == 1 and not extra[0].startswith("-"):
        args.game_id, extra = extra[0], []  # `show STUDY --db DB GAME_ID`: argparse takes no positional after an option
    if extra:
        parser.parse_args(argv)  # argparse's own message for what it could not read (exits 2)
    previous = _stop_on_sigterm() if args.command == "run" else None  # `serve` has its own
    try:
        rc = args.func(args)
        if argv is None and args.command == "run":
            # the process (``agora run``, not a caller in it) ends now: its shutdown's collections
            # need not walk every object it holds (about 0.05-0.1 s of CPU); nothing is left to write
            import gc

            gc.freeze()
        return rc
    except (StudyError, families.UnknownGame, *_loaded("agorabench.store.errors:StoreError", "agorabench.models.errors:SpecError")) as exc:  # SpecError: a model spec no command could read, one line
        print(f"agora: error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except (sqlite3.Error, *_loaded("sqlalchemy.exc:SQLAlchemyError")) as exc:
        from .store.errors import damaged, is_damage

        detail = (str(getattr(exc, "orig", None) or exc).splitlines() or [type(exc).__name__])[0]
        if is_damage(detail):  # e.g. text that is not UTF-8, a page that does not fit
            print(f"agora: error: {damaged(getattr(args, 'db', None) or 'the database', detail)}", file=sys.stderr)
            return 2
        print(f"agora: error: database: {redact(detail)} (is --db a complete agorabench database?)", file=sys.stderr)
        return 2
    except _loaded("agorabench.analysis.files:OutputError") as exc:  # "could not write PATH: CAUSE"; an earlier file of that name is kept whole
        print(f"agora: error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        print(f"agora: error: {exc.strerror or exc}:{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("agora: interrupted; finished games are stored, run again to resume", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _stop_on_sigterm() -> Any:
    """SIGTERM stops a command as Ctrl-C does (same message, finished games stored, status
    130): it calls whatever handles SIGINT now (the event loop's, which cancels the run, or
    Python's, which raises KeyboardInterrupt). Returns the handler it replaced (None: not the
    main thread, nothing installed)."""

    def on_term(signum: int, frame: Any) -> None:
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:  # SIGINT ignored or default at the C level: stop all the same
            raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, on_term)


if __name__ == "__main__":
    sys.exit(main())
