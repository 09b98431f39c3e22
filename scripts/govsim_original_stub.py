"""Play the original GovSim fishery (persona_v3, concurrent harvests) with its model layer and
its embedding model replaced by deterministic stubs; write every model call and the original's
environment log. Run by ``scripts/side_by_side_govsim.py`` in an interpreter that has the
original's light dependencies (numpy, pandas, omegaconf, pettingzoo, regex, pygtrie, backoff).

    GOVSIM=/path/GovSim PATHFINDER=/path/PathFinder [FRESH_CLOCK=1] python govsim_original_stub.py MONTHS OUTDIR

The heavy imports the original makes at start-up (torch, transformers, sentence-transformers,
vllm, wandb) are replaced by empty modules: none of them is used once the model and the
embeddings are stubs. The answers follow the policy of ``side_by_side_govsim.Policy``.
``FRESH_CLOCK=1`` removes the original's stale clock (its seats 1-4 keep the harvest day's
date through the chat: only seat 0 is stepped into the restaurant): every seat's clock is set
to the chat's day when the chat begins, as ours is.

Every change to the original's code goes through :func:`patch`, which stops the run with a clear
message when its target is missing (the original at another commit would otherwise be compared
unpatched, silently). Importing this file loads nothing of the original (tests import it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import types
from collections.abc import Callable
from typing import Any


class PatchError(SystemExit):
    """A change this comparison makes to the original's code found no target."""


def patch(owner: Any, name: str, make: Callable[[Any], Any], *, whose: str = "the original", compared: str = "GovSim at 1d11adf and PathFinder at 69b8d64 are the versions compared") -> None:
    """Replace ``owner.name`` by ``make(old)``; stop with a clear message when ``owner`` has no
    ``name`` (the original's code is not the one this comparison was written for). A class must
    define it itself: one inherited from a base class is not the code meant. ``whose`` and
    ``compared`` name the code and its versions in the message (the successor's stub reuses this)."""
    if not (name in vars(owner) if isinstance(owner, type) else hasattr(owner, name)):
        where = getattr(owner, "__name__", None) or type(owner).__name__
        raise PatchError(f"cannot patch {where}.{name}: {whose} has no such attribute ({compared})")
    setattr(owner, name, make(getattr(owner, name)))


class _Anything:
    """Stands for any attribute or call of a library the original imports but does not use here."""

    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        return _Anything()

    def __getattr__(self, name):
        return _Anything()


def _empty_module(name: str) -> None:
    module = types.ModuleType(name)
    module.__getattr__ = lambda attr: type(attr, (_Anything,), {})
    sys.modules[name] = module


def load_original() -> None:
    """Put the original on the path, with empty modules for its heavy imports and the class
    that a PettingZoo newer than its 1.24 renamed (1.25 made ``agent_selector`` a module and
    the class ``AgentSelector``)."""
    sys.path[:0] = [os.environ["GOVSIM"], os.environ["PATHFINDER"]]
    stub_heavy_imports(patch)


def stub_heavy_imports(patcher: Callable[[Any, str, Callable[[Any], Any]], None]) -> None:
    """Empty modules for the heavy imports GovSim and its successor make at start-up (unused once
    the model and the embeddings are stubs), and PettingZoo's selector class under the name they
    import (1.25 made ``agent_selector`` a module and the class ``AgentSelector``), changed
    through ``patcher``."""
    for name in ("torch", "transformers", "sentence_transformers", "vllm", "wandb", "wandb.sdk", "wandb.sdk.data_types", "wandb.sdk.data_types.trace_tree"):
        _empty_module(name)
    import pettingzoo.utils

    if isinstance(getattr(pettingzoo.utils, "agent_selector", None), types.ModuleType):
        patcher(pettingzoo.utils, "agent_selector", lambda _: pettingzoo.utils.AgentSelector)


def fresh_clock(loop: Callable[..., Any]) -> Callable[..., Any]:
    """A persona's ``loop`` that, when the chat begins (seat 0 steps into the restaurant), sets
    every persona's clock to the chat's day before the chat (the original leaves seats 1-4 at
    the harvest day: their notes are dated then and their retrievals use it)."""

    def wrapped(self, obs):
        if obs.current_location == "restaurant":
            for other in self.other_personas.values():
                other.current_time = obs.current_time
        return loop(self, obs)

    return wrapped


CALLS: list[dict] = []
NAMES = ["John", "Kate", "Jack", "Emma", "Luke"]


def kind_of(user: str) -> str:
    """Which of the original's requests a prompt is, by the task it ends with."""
    checks = [
        ("harvest", "how many tons of fish would you catch"),
        ("remark", "What would you say next in the group chat"),
        ("summary", "Summarize the conversation above in one sentence"),
        ("limit", "explicit agreement on a concrete fishing limit"),
        ("rate", "Rate the significance of"),
        ("note_plan", "you need to remember for your planning"),
        ("note_interest", "you might have found interesting"),
        ("insights", "high-level insights"),
    ]
    return next((kind for kind, marker in checks if marker in user), "other")


def answer(kind: str, user: str) -> str:
    """The shared policy, written as the original's parsers read it."""
    if kind == "harvest":
        return "We should be careful with the lake. Answer: 10 tons."
    if kind == "remark":
        me = user.split("You are ", 1)[1].split(",", 1)[0]
        said = re.findall(r"^-\S", user.split("Conversation so far:\n", 1)[1].split("\n\n", 1)[0], re.MULTILINE)
        end = "yes" if len(said) >= 5 else "no"  # the Mayor's report, then 4 remarks: the 5th ends it
        return f"Response: I suggest we each catch 10 tons.\nConversation conclusion by me: {end}\nNext speaker: {NAMES[(NAMES.index(me) + 1) % 5]}"
    if kind == "summary":
        return "The fishermen agreed to catch 10 tons each."
    if kind == "limit":
        return "Everyone proposed 10 tons. Answer: 10"
    if kind == "rate":
        return "5"
    if kind == "note_plan":
        return "I need to remember that we agreed on 10 tons each."
    if kind == "note_interest":
        return "It was interesting that everybody agreed quickly."
    if kind == "insights":
        return "1. The group keeps to a limit of 10 tons (because of 1, 2)\n2. Cooperation keeps the lake full (because of 2, 3)\n"
    return "OK."


def stub_api(name: str):
    """The original's model layer (PathFinder's ``ModelAPI``) with the policy's answers, every
    call recorded."""
    import pathfinder

    class StubAPI(pathfinder.ModelAPI):
        def request_api(self, chat, temperature, top_p, max_tokens):
            user = "".join(m["content"] for m in chat if m["role"] == "user")
            kind = kind_of(user)
            reply = answer(kind, user)
            CALLS.append({"model": self.model_name, "kind": kind, "messages": chat, "reply": reply, "max_tokens": max_tokens, "temperature": temperature})
            return reply

    return StubAPI(name, seed=42)


class StubLogger:
    """The wandb logger (nothing logged)."""

    run_name = "stub"

    def get_agent_chain(self, *a):
        return None

    def start_chain(self, *a):
        return None

    def end_chain(self, *a):
        pass

    def log_trace_llm(self, **k):
        pass

    def log_game(self, *a, **k):
        pass

    def save(self, *a, **k):
        pass


def bag_of_words(text: str):
    """The embeddings both engines use in the comparison: words hashed into 256 counts."""
    import numpy as np

    v = np.zeros(256)
    for word in text.lower().split():
        v[int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
    return v + 1e-6


class BagOfWordsModel:
    """Stands for the sentence-transformers model (mxbai-embed-large-v1)."""

    def encode(self, text, convert_to_numpy=True, show_progress_bar=False):
        return bag_of_words(text)


def stub_embedding():
    """The original's embedding model with only its sentence-transformers model replaced: its
    own ``embed_retrieve`` still puts its query prefix before every focal point (the empty
    context too), and memories are embedded bare."""
    from simulation.persona.embedding_model import EmbeddingModel

    for method in ("embed", "embed_retrieve"):  # the stub relies on both being the original's
        patch(EmbeddingModel, method, lambda old: old)
    model = EmbeddingModel.__new__(EmbeddingModel)
    model.model, model.device = BagOfWordsModel(), "cpu"
    return model


def main() -> None:
    months, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    load_original()
    from omegaconf import OmegaConf
    from simulation.utils.models import ModelWandbWrapper

    if os.environ.get("FRESH_CLOCK") == "1":
        from simulation.scenarios.fishing.agents.persona_v3 import FishingPersona

        patch(FishingPersona, "loop", fresh_clock)
    exp = OmegaConf.load(f"{os.environ['GOVSIM']}/simulation/scenarios/fishing/conf/experiment/fish_baseline_concurrent.yaml")
    del exp["defaults"]
    for i in range(5):
        exp.personas[f"persona_{i}"].goals = ""
    exp.agent.converse.inject_resource_observation = True
    exp.env.max_num_rounds = months
    logger = StubLogger()
    wrappers = [ModelWandbWrapper(stub_api(f"persona{i}"), render=False, wanbd_logger=logger, temperature=0.0, top_p=1.0, seed=42, is_api=True) for i in range(5)]
    framework = ModelWandbWrapper(stub_api("framework"), render=False, wanbd_logger=logger, temperature=0.0, top_p=1.0, seed=42, is_api=True)
    from simulation.scenarios.fishing.run import run

    run(exp, logger, wrappers, framework, stub_embedding(), out)
    with open(f"{out}/calls.json", "w") as f:
        json.dump(CALLS, f, default=str)


if __name__ == "__main__":
    main()
