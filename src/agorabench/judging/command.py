"""``agora judge``: the command's work once the command line has found the study's games
(:func:`judge_command`), and the human coding file of ``--agreement`` (:func:`read_coding`)."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from ..analysis.agreement import agreement, code_of
from ..core.errors import StudyError
from ..loop import run as run_loop
from ..redact import redact
from ..store import judgements as table
from ..store.store import Store
from .judge import Judge, judge_entry, plan
from .messages import collect
from .prompt import PROMPT_VERSION
from .taxonomy import Taxonomy, load_taxonomy


def read_coding(path: str, taxonomy: Taxonomy) -> dict[str, str]:
    """A person's coding: a CSV file with the columns ``message_id`` and ``label`` (several labels
    of a multi-label taxonomy separated by ``|`` or ``;``), as message id -> nominal code. A
    label outside the taxonomy, a missing column or a message coded twice is a StudyError
    naming the line."""
    p = Path(path)
    if not p.is_file():
        raise StudyError(f"coding file not found: {path}")
    names = {n.casefold(): n for n in taxonomy.names}
    if taxonomy.none_label:
        names[taxonomy.none_label.casefold()] = taxonomy.none_label
    out: dict[str, str] = {}
    with p.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        fields = [c.strip() for c in reader.fieldnames or []]
        if "message_id" not in fields or "label" not in fields:
            raise StudyError(f"{path}: a coding file needs the columns message_id and label (it has: {', '.join(fields) or 'none'})")
        for line, row in enumerate(reader, 2):
            row = {(k or "").strip(): (v or "") for k, v in row.items()}
            mid, raw = row["message_id"].strip(), row["label"].strip()
            if not mid:
                continue
            parts = [x.strip() for x in raw.replace(";", "|").split("|") if x.strip()]
            if not parts or (len(parts) > 1 and not taxonomy.multi_label):
                raise StudyError(f"{path}, line {line}: {'no label' if not parts else 'several labels for a single-label taxonomy'} for {mid}")
            unknown = [x for x in parts if x.casefold() not in names]
            if unknown:
                raise StudyError(f"{path}, line {line}: {unknown[0]!r} is not a category of taxonomy {taxonomy.name!r} ({', '.join(names.values())})")
            if mid in out:
                raise StudyError(f"{path}, line {line}: message {mid} is coded twice")
            out[mid] = code_of([names[x.casefold()] for x in parts])
    if not out:
        raise StudyError(f"{path}: no coded message")
    return out


def judge_codes(store: Store, study: str, judge: str, taxonomy: Taxonomy) -> dict[str, str]:
    """A judge's valid codes of the study with this taxonomy and prompt: message id -> code."""
    return {
        r["message_id"]: code_of(r["labels"])
        for r in table.read(store.engine, study, judge=judge)
        if r["valid"] and r["taxonomy_hash"] == taxonomy.digest and r["prompt_version"] == PROMPT_VERSION
    }


def judge_command(args: argparse.Namespace, study: str, ids: set[str] | None, db: str, models: dict | None = None) -> int:
    """Plan, run and (with ``--agreement``) compare judge passes; prints one line per step."""
    taxonomy = load_taxonomy(args.taxonomy)
    if len(args.judge) > 2:
        raise StudyError("give one --judge, or two for inter-judge agreement")
    if len(set(args.judge)) != len(args.judge):
        raise StudyError("the two --judge models are the same")
    prices = {k: v for k, v in (("price_input", getattr(args, "price_input", None)), ("price_output", getattr(args, "price_output", None))) if v is not None}
    if any(v < 0 for v in prices.values()):
        raise StudyError("--price-input and --price-output are dollars per million tokens, 0 or more")
    entries = [judge_entry(j, models).model_copy(update=prices) for j in args.judge]
    coding = read_coding(args.agreement, taxonomy) if args.agreement else None
    store = Store(db, read_only=bool(args.dry_run))
    try:
        messages = collect(store, study, ids, set(args.kind) if args.kind else None)
        if not messages:
            raise StudyError(f"study {study!r} has no stored messages to judge" + (f" of kind {', '.join(args.kind)}" if args.kind else "") + " (chat remarks, agendas, offers' messages: its games hold none)")
        print(f"study {study}: {len(messages):,} message(s) ({', '.join(f'{k} {n:,}' for k, n in _kinds(messages).items())}); taxonomy {taxonomy.name} ({len(taxonomy.categories)} categories, {'multi' if taxonomy.multi_label else 'single'}-label)")
        for entry in entries:
            done = table.judged_ids(store.engine, study, entry.name, taxonomy.digest, PROMPT_VERSION)
            todo = [m for m in messages if m.id not in done]
            estimate = plan(entry, taxonomy, todo, len(messages) - len(todo))
            print(estimate.line())
            if args.dry_run or not todo:
                continue
            spent = sum(r["cost"] or 0.0 for r in table.read(store.engine, study, judge=entry.name) if r["taxonomy_hash"] == taxonomy.digest)
            judge = Judge(store, study, entry, taxonomy, max_retries=args.max_retries, use_cache=not args.no_cache)

            async def go(j: Judge = judge) -> object:
                try:
                    return await j.run(todo, concurrency=args.concurrency, budget=args.budget, spent=spent)
                finally:
                    await j.aclose()

            stats = run_loop(go())
            line = f"judge {entry.name}: {stats.coded:,} coded ({stats.invalid:,} invalid), {stats.failed:,} failed; {stats.calls:,} model calls, {stats.cache_hits:,} cache hits, ${stats.cost:.4f}; db {redact(db)}"
            if stats.budget_stopped:
                money = f"${args.budget:,.2f}" if round(args.budget, 2) == args.budget else f"${args.budget:,.6g}"
                line += f"; budget {money} reached: {stats.budget_stopped:,} message(s) left to code (run again with a higher budget)"
            print(line)
            for err in stats.errors:
                print(f"agora: warning: judge {entry.name}: {err}", file=sys.stderr)
        if coding is not None or len(entries) == 2:
            _agreements(store, study, [e.name for e in entries], taxonomy, coding, args.agreement)
    finally:
        store.dispose()
    return 0


def _kinds(messages: list) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in messages:
        out[m.kind] = out.get(m.kind, 0) + 1
    return out


def _agreements(store: Store, study: str, judges: list[str], taxonomy: Taxonomy, coding: dict[str, str] | None, coding_path: str | None) -> None:
    codes = {j: judge_codes(store, study, j, taxonomy) for j in judges}
    pairs = []
    if coding is not None:
        stored = {m for j in judges for m in table.judged_ids(store.engine, study, j, taxonomy.digest, PROMPT_VERSION)}
        unknown = [m for m in coding if m not in stored]
        if unknown:
            print(f"agora: warning: {len(unknown)} message id(s) of {coding_path} were not judged (e.g. {unknown[0]}); they are left out", file=sys.stderr)
        pairs += [((j, codes[j]), ("human", coding)) for j in judges]
    if len(judges) == 2:
        pairs.append(((judges[0], codes[judges[0]]), (judges[1], codes[judges[1]])))
    for (n1, c1), (n2, c2) in pairs:
        try:
            print(agreement(c1, c2, (n1, n2)).line())
        except ValueError as exc:
            print(f"{n1} vs {n2}: {exc}")
