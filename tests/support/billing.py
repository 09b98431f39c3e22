"""The cost plan against a loopback run's billed cost, seat by seat (issue 39 §4): shared by
``benchmarks/plan_vs_billed.py`` and ``tests/e2e/test_plan_billed_tiers.py``.

A *seat* is one priced model entry (Anthropic with prompt caching, OpenAI at the standard or
the flex tier, either in batch mode) filling every language-model seat of a study. For each,
:func:`compare` runs the study (``agora run``, in this process) against a fresh loopback server
with prompt caching on (:func:`cache_server`: tests/support/providers.py ``--prompt-cache``
behind the batch routes of tests/support/batch_servers.py), sums the stored turns' ``cost`` (what
the model's books billed from the server's usage), then plans the same study (``build_plan``,
tokens as the server counts them: whitespace words; output per call assumed at the run's mean)
and sets the two side by side.

OpenAI's own API on the loopback (:func:`openai_own_api`): the plan estimates OpenAI's prompt
cache only for a model of OpenAI's own API (no ``base_url``), and the backend sends a
``prompt_cache_key`` only there; so an OpenAI seat names no ``base_url`` and, for the run, the
``openai`` provider's default address is the loopback server's and its host counts as OpenAI's
API (both patched in this process for the run only; nothing in the package changes).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from .helpers import serving
    from .studies import commons, model, scripted, study_toml
except ImportError:  # run as a script: tests/support is the first entry of sys.path
    from helpers import serving  # type: ignore[no-redef]

KEYS = {"OPENAI_API_KEY": "sk-loopback-billing", "ANTHROPIC_API_KEY": "sk-ant-loopback-billing"}


def words(text: str) -> int:
    """The loopback servers' token measure: whitespace-separated words."""
    return len(text.split())


# ---- the servers


@contextlib.contextmanager
def cache_server(provider: str, cautious: bool = True) -> Iterator[str]:
    """A fresh loopback server of ``provider`` (openai or anthropic) with its prompt cache on and
    its batch routes (this file run as a script); ``cautious``: numbers drawn low (a commons
    lasts all its months). Yields ``http://127.0.0.1:PORT/v1``."""
    with serving(Path(__file__), "--provider", provider, *(["--cautious"] if cautious else [])) as url:
        yield url


@contextlib.contextmanager
def openai_own_api(base_url: str) -> Iterator[None]:
    """For the block: the ``openai`` provider's default address is ``base_url`` and its host
    counts as OpenAI's own API (so a model entry without ``base_url`` reaches the loopback, and
    gets ``prompt_cache_key`` as on OpenAI's API); the API keys are set."""
    from urllib.parse import urlsplit

    from agorabench.models import openai_compat
    from agorabench.models.providers import PROVIDERS

    held = PROVIDERS["openai"], openai_compat.OPENAI_API_HOST, {k: os.environ.get(k) for k in KEYS}
    PROVIDERS["openai"] = dataclasses.replace(held[0], base_url=base_url)
    openai_compat.OPENAI_API_HOST = urlsplit(base_url).hostname or "127.0.0.1"
    os.environ.update(KEYS)
    try:
        yield
    finally:
        PROVIDERS["openai"], openai_compat.OPENAI_API_HOST = held[0], held[1]
        for k, v in held[2].items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ---- the seats and the studies


@dataclass(frozen=True)
class Seat:
    """One priced model entry filling every language-model seat (``settings``: the entry's)."""

    label: str
    provider: str
    spec: str
    settings: dict[str, Any] = field(default_factory=dict)

    def entry(self, base_url: str) -> dict[str, Any]:
        """The model entry, named ``remote``: Anthropic at ``base_url``; OpenAI without one (its own
        API, see :func:`openai_own_api`)."""
        where = {"base_url": base_url} if self.provider == "anthropic" else {}
        batch = {"batch_poll": 0.02, "batch_poll_max": 0.1} if self.settings.get("batch") else {}
        return model("remote", self.spec, **where, max_tokens=100, **self.settings, **batch)


#: Example prices (dollars per million tokens): claude-sonnet-4-5 $3 in, $0.30 cache read, $15
#: out (writes 1.25 x input at the 5-minute TTL); gpt-4.1-mini $0.40 in, $0.10 cached, $1.60 out
#: (flex and batch: half of each, by the provider's documented discount).
SONNET = {"price_input": 3.0, "price_output": 15.0, "price_cached_input": 0.30}
MINI = {"price_input": 0.40, "price_output": 1.60, "price_cached_input": 0.10}

SEATS = {
    "anthropic": Seat("Anthropic sonnet-4.5, prompt caching", "anthropic", "anthropic/claude-sonnet-4-5", SONNET),
    "openai": Seat("OpenAI gpt-4.1-mini, standard", "openai", "openai/gpt-4.1-mini", MINI),
    "flex": Seat("OpenAI gpt-4.1-mini, flex", "openai", "openai/gpt-4.1-mini", {**MINI, "service_tier": "flex"}),
    "anthropic-batch": Seat("Anthropic sonnet-4.5, batch + caching", "anthropic", "anthropic/claude-sonnet-4-5", {**SONNET, "batch": True}),
    "openai-batch": Seat("OpenAI gpt-4.1-mini, batch", "openai", "openai/gpt-4.1-mini", {**MINI, "batch": True}),
    # no price_cached_input: the plan reads at Anthropic's 0.1 x input, the books at price_input
    "anthropic-no-read-price": Seat("Anthropic sonnet-4.5, caching, no price_cached_input", "anthropic", "anthropic/claude-sonnet-4-5", {"price_input": 3.0, "price_output": 15.0}),
}


def whole_transcripts(seat: Seat, url: str, months: int = 12, agents: int = 5, steps: int = 10, repeats: int = 1, universalization: tuple[bool, ...] = (False,)) -> str:
    """A commons fishery of the legacy protocol (each agent rereads its whole transcript: prompts
    that grow past the caches' minimum), ``seat`` in every agent's seat."""
    fixed = {"scenario": "fishery", "n_agents": agents, "months": months, "max_conversation_steps": steps, "protocol": "legacy"}
    return commons("billed_commons", fixed=fixed, grid={"universalization": list(universalization)}, models=[seat.entry(url)], repeats=repeats, seed=42, max_retries=2)


def bargaining(seat: Seat, url: str, horizon: int = 6) -> str:
    """GLEE bargaining, ``seat`` as Alice against always-reject for ``horizon`` rounds over 8
    configurations: every game the same calls whatever is answered, prompts under any cache's
    minimum."""
    return study_toml(
        "billed_glee",
        "glee.bargaining",
        matchups="seats",
        seats=[{"alice": "remote", "bob": "rej"}],
        max_retries=0,
        stop_after_invalid=0,
        grid={"delta_a": [0.8, 0.9], "money": [100, 10000], "messages": [False, True]},
        fixed={"horizon": horizon, "delta_b": 0.9},
        models=[seat.entry(url), scripted("rej", "always-reject")],
    )


STUDIES = {"commons": whole_transcripts, "bargaining": bargaining}


# ---- the comparison


@dataclass
class Side:
    """Calls, input (of it read from and written to the prompt cache), output and dollars."""

    calls: float
    input: float
    cached: float
    written: float
    output: float
    cost: float


@dataclass
class Compared:
    """A seat's plan and its run; ``priced``: the plan's prices applied to the run's own tokens
    (the plan's pricing against the model's books); ``replayed``: (read, written) of the plan's
    cache simulator (:mod:`agorabench.models.prompt_cache`, the plan's rules) on the run's own
    prompts, seat by seat (against the server's reported reads and writes)."""

    seat: Seat
    tier: str
    plan: Side
    run: Side
    output_per_call: float
    priced: float
    replayed: tuple[float, float]
    retries: int = 0
    rounds: int = 0
    #: Model calls by the tier the books billed them at.
    tiers: dict[str, int] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """The plan's cost over the billed cost."""
        return self.plan.cost / self.run.cost if self.run.cost else float("nan")


def billed(db: Path) -> tuple[Side, int, dict[str, int]]:
    """What the stored turns of a run used and cost (model calls, not response-cache hits), how
    many re-asks they made, and the calls by the tier they were billed at."""
    with sqlite3.connect(db) as con:
        row = con.execute(
            "select count(*), coalesce(sum(t.prompt_tokens), 0), coalesce(sum(u.cached_tokens), 0), coalesce(sum(u.cache_write_tokens), 0),"
            " coalesce(sum(t.completion_tokens), 0), coalesce(sum(t.cost), 0), coalesce(sum(t.retries), 0)"
            " from turns t left join usage u on u.game_id = t.game_id and u.idx = t.idx where t.prompt_tokens > 0 and not t.cached"
        ).fetchone()
        tiers = dict(con.execute(
            "select coalesce(u.tier, 'standard'), count(*) from turns t left join usage u on u.game_id = t.game_id and u.idx = t.idx"
            " where t.prompt_tokens > 0 and not t.cached group by 1"
        ).fetchall())
        statuses = dict(con.execute("select status, count(*) from games group by status").fetchall())
    if set(statuses) != {"done"}:
        raise RuntimeError(f"the run left games unfinished: {statuses}")
    return Side(*(float(x) for x in row[:6])), int(row[6]), tiers


def replay(db: Path, entry: Any) -> tuple[float, float]:
    """(read, written) of the plan's cache simulator on the run's own prompts: each seat's model
    calls in order, OpenAI's rules with a key per seat, Anthropic's with the model's minimum."""
    from agorabench.models.prompt_cache import (
        anthropic_min_tokens,
        anthropic_share,
        openai_share,
    )
    from agorabench.store.store import Store

    store = Store(db, read_only=True)
    try:
        seats: dict[tuple[str, str], list[list[dict[str, str]]]] = {}
        for t in store.turns():
            if t["prompt_tokens"] and not t["cached"]:
                seats.setdefault((t["game_id"], t["role"]), []).append(t["messages"])
    finally:
        store.dispose()
    calls = list(seats.values())
    if entry.model_spec.provider == "anthropic":
        share = anthropic_share(calls, 1.0, ttl=entry.cache_ttl, min_tokens=anthropic_min_tokens(entry.model_spec.name), count_tokens=words)
        return share.read_tokens, share.write_tokens
    share = openai_share(calls, 1.0, 1.0, count_tokens=words)
    return share.read_tokens, 0.0  # OpenAI bills no writes: the server reports none


def compare(seat: Seat, study: str, workdir: Path, samples: int = 2, **shape: Any) -> Compared:
    """Run ``study`` (a key of :data:`STUDIES`, ``shape`` its arguments) with ``seat`` against a
    fresh loopback server, then plan it (``samples`` sample plays per kind, as ``agora plan
    --samples``) with output per call at the run's mean."""
    from agorabench.cli import main as agora
    from agorabench.core.plan import plan_study
    from agorabench.core.study import load_study

    workdir.mkdir(parents=True, exist_ok=True)
    name = f"{study}-{seat.label}".replace(" ", "_").replace(",", "").replace("+", "and")
    path, db = workdir / f"{name}.toml", workdir / f"{name}.db"
    db.unlink(missing_ok=True)
    with cache_server(seat.provider) as url:
        path.write_text(STUDIES[study](seat, url, **shape))
        out = io.StringIO()
        with openai_own_api(url), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = agora(["run", str(path), "--db", str(db), "--quiet", "--no-probe"])
        if rc != 0:
            raise RuntimeError(f"agora run exited {rc}: {out.getvalue()}")
    run, retries, tiers = billed(db)
    per_call = run.output / run.calls if run.calls else 0.0
    loaded = load_study(path)
    plan, _ = plan_study(loaded, None, samples=samples, count_tokens=words, output_tokens=per_call)
    m = plan.models["remote"]
    side = Side(m.calls, m.input_tokens, m.cached_input_tokens, m.cache_write_tokens, m.output_tokens, m.cost)
    priced = m.price(run.input, run.cached, run.written, run.output)
    return Compared(seat, m.tier, side, run, per_call, priced, replay(db, loaded.models["remote"]), retries, plan.rounds, tiers)


# ---- run as a script: the server


def main(argv: list[str] | None = None) -> None:
    """``python tests/support/billing.py PORT --provider NAME [--cautious]``: a batch server (and its
    live routes) with the prompt cache on."""
    import providers  # type: ignore[import-not-found]
    from aiohttp import web
    from batch_servers import make_batch_app  # type: ignore[import-not-found]

    p = argparse.ArgumentParser(description="A loopback provider server with its prompt cache on.")
    p.add_argument("port", type=int)
    p.add_argument("--provider", required=True, choices=["openai", "anthropic"])
    p.add_argument("--cautious", action="store_true")
    a = p.parse_args(argv)
    providers.CAUTIOUS = a.cautious
    web.run_app(make_batch_app(a.provider, prompt_cache=True), host="127.0.0.1", port=a.port, print=None, access_log=None, shutdown_timeout=1.0)


if __name__ == "__main__":
    main()
