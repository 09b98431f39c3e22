"""Study files: which game, which parameter grid, which models in which seats, how many repeats.

A study file (TOML or YAML) looks like::

    name = "envy_points"
    game = "envy.points"
    repeats = 1
    seed = 0
    matchups = "ordered_pairs"   # ordered_pairs | all_pairs | same_model | seats
    # sample = 40                # optional: only 40 grid configurations per seating (a sampled design)
    # prompts = "my_prompts/"    # optional folder of template overrides (a prompt variant),
    #                             # beside the study file (its real path, symlinks followed)
    # replay_on_prompt_change = true   # play stored games again whose prompt version is not the
    #                             # templates' current one (default: keep them, with a warning)

    [grid]                        # every combination becomes a game configuration
    matrix = ["M1", "M2", "M3"]

    [fixed]                       # parameters shared by every configuration
    ...

    [[models]]
    name = "smol"
    spec = "local"

A study may also play several games, each with its own parameters: leave out ``game``, ``grid``,
``fixed`` and ``configs`` and list the games as parts (models, seats, repeats and seed are shared)::

    [[parts]]
    game = "glee.bargaining"
    [parts.grid]
    delta_a = [0.8, 0.9]

    [[parts]]
    game = "glee.persuasion"
    [parts.fixed]
    horizon = 20

It expands into :class:`GameSpec` objects whose id is a hash of everything that defines the game,
so running the same file again skips finished games, and adding a model or a repeat only runs
the new cells.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator, TypeAdapter, ValidationError

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from ..families import load_game, strategies
from ..models.pricing import check_tier_prices
from ..models.reasoning import EFFORTS
from ..models.spec import ModelSpec, check_base_url, parse_spec, spec_kind, split_url
from ..redact import redact
from .errors import StudyError  # defined apart so that the command line names it without this module
from .game import Game
from .seats import SeatKind, effort_seat, kind_of_spec


#: Most games one study may expand to unless its file sets ``max_games`` (a typo like
#: ``repeats = 100000000`` or 10,000 models in ordered pairs fails at once, counted before
#: anything that grows with the design is allocated).
MAX_GAMES = 10_000_000


class ModelEntry(BaseModel):
    """One player type: an LLM (``local``, ``openai/NAME``, ``anthropic/NAME``, ``NAME@URL``),
    ``strategy/NAME``, a person (``human``) or an outside agent (``http/URL``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    #: Fields that say how calls are made, not what a game is: left out of game ids, so changing
    #: them never replays finished games.
    RUN_ONLY: ClassVar[frozenset[str]] = frozenset(
        {
            "transport", "requests_per_minute", "tokens_per_minute", "adaptive_concurrency", "prompt_caching", "price_cached_input", "state_cache_mb",
            "batch", "batch_poll", "batch_poll_max", "service_tier", "service_tier_fallback", "cache_ttl", "prompt_cache_key", "cache_write_multiplier", "tier_prices",
            "reasoning_summary",
        }
    )

    name: str = Field(min_length=1)
    spec: str = Field(min_length=1)
    display_name: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    #: Sampling temperature sent with every call (0 to 2), or ``"default"``: send no temperature
    #: and no seed, so the provider samples as it does by default (the original GLEE project's
    #: setting).
    temperature: Annotated[float, Field(ge=0, le=2)] | Literal["default"] = 0.0
    max_tokens: int = Field(256, ge=1, le=1_000_000)
    max_concurrency: int = Field(16, ge=1, le=10_000)
    #: Attempts per call before a backend error aborts the game (rate limits and transient faults).
    max_attempts: int = Field(5, ge=1, le=100)
    timeout: float = Field(120.0, gt=0, le=3600)  # seconds per request (hosted backends)
    constrained: bool = False
    price_input: float = Field(0.0, ge=0, le=10_000)  # dollars per million prompt tokens
    price_output: float = Field(0.0, ge=0, le=10_000)
    #: Dollars per million prompt tokens read from the server's prompt cache (None: price_input).
    price_cached_input: float | None = Field(None, ge=0)
    #: OpenAI-compatible endpoints: ``lean`` (our HTTP/1.1 client, default), ``aiohttp``, ``sdk``
    #: (the openai SDK) or ``responses`` (OpenAI's Responses API); see
    #: :mod:`agorabench.models.transport`.
    transport: Literal["lean", "aiohttp", "sdk", "responses"] = "lean"
    #: The provider's budgets; calls are paced to stay within them (None: no limit).
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    #: Halve the calls in flight on a rate limit and grow back by one per window of successes.
    adaptive_concurrency: bool = True
    #: Anthropic: mark the append-only transcript for the server's prompt cache.
    prompt_caching: bool = True
    #: Provider batches in lockstep (OpenAI Batch, Anthropic Message Batches, Gemini batch mode):
    #: every waiting call of the run's games goes into one batch per round (``agora run --batch``).
    batch: bool = False
    #: Seconds before a submitted batch is first polled; each later poll waits longer (x1.5), at
    #: most ``batch_poll_max`` seconds.
    batch_poll: float = Field(1.0, gt=0, le=3600)
    batch_poll_max: float = Field(300.0, gt=0, le=86_400)
    #: The provider's service tier (OpenAI ``flex`` / ``priority`` / ``default`` / ``auto``;
    #: Gemini's ``flex`` / ``priority``); None: not sent (the account's default).
    service_tier: str | None = Field(None, min_length=1, max_length=40)
    #: On a flex tier's "resource unavailable" (429), call the standard tier instead of waiting
    #: and retrying (recorded per call).
    service_tier_fallback: bool = False
    #: Anthropic prompt cache: how long a written prefix lives (``5m`` or ``1h``).
    cache_ttl: Literal["5m", "1h"] = "5m"
    #: OpenAI: send ``prompt_cache_key`` (one per game and seat) so a seat's calls reach the same cache.
    prompt_cache_key: bool = True
    #: Price of prompt tokens written to the prompt cache, as a multiple of ``price_input``
    #: (None: the provider's own: Anthropic 1.25 at a 5-minute TTL, 2 at 1 hour; others 1).
    cache_write_multiplier: float | None = Field(None, ge=0, le=100)
    #: Prices by tier and time of day, each ``{input, output, cached_input}`` in dollars per
    #: million tokens: ``batch`` (default: half of each standard price), ``flex`` (default on
    #: OpenAI: the batch price), ``priority``, ``off_peak`` (with ``hours = "16:30-00:30"``, UTC).
    tier_prices: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: The embedded model (``local``): MiB of saved prefix states kept (None: the default; 0: none).
    state_cache_mb: int | None = Field(None, ge=0)
    #: The embedded model (``model_path``, ``n_threads``) and scripted players' parameters; a
    #: hosted model's extra request fields go in ``extra_body``.
    params: dict[str, Any] = Field(default_factory=dict)
    #: Reasoning models (see :mod:`agorabench.models.reasoning` and the README's "Reasoning
    #: models"): whether the model reasons (None: guessed from provider and name), its effort
    #: (a list seats the model once per effort, named ``NAME-EFFORT``), the thinking switch, and
    #: the output tokens it may spend thinking on top of ``max_tokens``.
    reasoning: bool | None = None
    reasoning_effort: Literal[EFFORTS] | list[Literal[EFFORTS]] | None = None  # type: ignore[valid-type]
    thinking: Literal["on", "off", "adaptive"] | None = None
    reasoning_budget: int | None = Field(None, ge=1, le=1_000_000)
    #: Request fields sent as they are (JSON), merged last: what the study needs and no setting names.
    extra_body: dict[str, Any] | None = None
    #: The Responses transport: the reasoning summary asked for (``auto``, ``concise``,
    #: ``detailed``; ``none``: none). It changes the stored thoughts, not the answer: not part of
    #: a game's id or of the response cache's key.
    reasoning_summary: Literal["auto", "none", "concise", "detailed"] = "auto"

    #: Fields added after game ids were first pinned: part of a game's id only when set, so the
    #: games of entries that leave them unset keep their ids.
    OPTIONAL_IDENTITY: ClassVar[tuple[str, ...]] = ("reasoning", "reasoning_effort", "thinking", "reasoning_budget", "extra_body")

    def identity(self) -> dict[str, Any]:
        """What of this entry defines its games (part of their ids): every field but
        :attr:`RUN_ONLY`, and the reasoning fields only when set."""
        dumped = self.model_dump(mode="json", exclude=self.RUN_ONLY)
        for name in self.OPTIONAL_IDENTITY:
            if dumped.get(name) is None:
                dumped.pop(name, None)
        return dumped

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking_switch(cls, v: Any) -> Any:
        """``thinking = true/false`` reads as ``"on"/"off"``."""
        return {True: "on", False: "off"}.get(v, v) if isinstance(v, bool) else v

    @field_validator("tier_prices")
    @classmethod
    def _tier_prices(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Known tiers, known keys, prices that are prices, hours that are UTC spans
        (:func:`~agorabench.models.pricing.check_tier_prices`)."""
        return check_tier_prices(v)

    @field_validator("extra_body")
    @classmethod
    def _json_body(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        """``extra_body`` is JSON: text, finite numbers, booleans, null, lists and tables."""
        if v is None:
            return v
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"extra_body must be JSON ({exc})") from None
        reserved = sorted({"model", "messages", "stream"} & set(v))
        if reserved:
            raise ValueError(f"extra_body may not set {reserved[0]!r} (the game sets it)")
        return v

    #: Settings of a language model's calls that an outside agent (``http/URL``) never gets:
    #: setting one on its entry is an error rather than a setting silently ignored.
    MODEL_ONLY: ClassVar[frozenset[str]] = frozenset(
        {"temperature", "max_tokens", "constrained", "price_input", "price_output", "price_cached_input", "transport", "requests_per_minute", "tokens_per_minute", "adaptive_concurrency", "prompt_caching", "state_cache_mb", "reasoning", "reasoning_effort", "thinking", "reasoning_budget", "extra_body",
         "batch", "batch_poll", "batch_poll_max", "service_tier", "service_tier_fallback", "cache_ttl", "prompt_cache_key", "cache_write_multiplier", "tier_prices",
         "reasoning_summary"}
    )

    @model_validator(mode="after")
    def _outside_agent(self) -> "ModelEntry":
        """An outside agent's spec is ``http/`` and its http(s) URL; of the entry's settings it
        uses ``timeout`` (seconds per move), ``max_attempts``, ``max_concurrency``,
        ``api_key_env`` and ``params`` (sent with every request); a language model's settings
        are an error naming them."""
        if spec_kind(self.spec) != "outside":
            return self
        parse_spec(self.spec, self.base_url, owner=self.name)  # SpecError (a ValueError): one line
        unused = sorted(self.MODEL_ONLY & self.model_fields_set)
        if unused:
            raise ValueError(f"{', '.join(unused)}: not used by an outside agent ({redact(self.spec)}); it takes timeout, max_attempts, max_concurrency, api_key_env and params")
        return self

    @model_validator(mode="after")
    def _params_where_read(self) -> "ModelEntry":
        """``params`` are read by the embedded model and scripted players only: on a hosted
        model they would be ignored, so they are an error naming what to use instead."""
        if self.params and spec_kind(self.spec) == "hosted":
            raise ValueError(f"params {sorted(self.params)} are not sent to a hosted model: put request fields in extra_body, reasoning in reasoning_effort / thinking / reasoning_budget")
        if isinstance(self.reasoning_effort, list) and not self.reasoning_effort:
            raise ValueError("reasoning_effort is an empty list; give one effort or several")
        return self

    @model_validator(mode="after")
    def _service_tier_where_sent(self) -> "ModelEntry":
        """``service_tier`` travels on OpenAI-compatible APIs only: on an Anthropic model it
        would be ignored, so it is an error naming what to do instead (the embedded model has no
        tiers: a ``model_defaults`` tier leaves it alone)."""
        if self.service_tier is None or spec_kind(self.spec) != "hosted":
            return self
        if self.spec.split("/", 1)[0] == "anthropic":
            raise ValueError("service_tier is sent to OpenAI-compatible APIs only; Anthropic's own (auto, standard_only) goes in extra_body = {service_tier = ...}")
        return self

    @model_validator(mode="after")
    def _summary_where_sent(self) -> "ModelEntry":
        """``reasoning_summary`` other than ``auto`` travels on the Responses transport only: on
        any other it would be ignored, so it is an error naming what to do instead."""
        if self.reasoning_summary != "auto" and spec_kind(self.spec) == "hosted" and self.transport != "responses":
            raise ValueError(f"reasoning_summary = {self.reasoning_summary!r} is sent by the Responses API only; set transport = \"responses\" (or leave reasoning_summary unset)")
        return self

    def efforts(self) -> list["ModelEntry"]:
        """This entry once per reasoning effort when it names several (the rule of
        :func:`~agorabench.core.seats.effort_seat`), else itself."""
        if not isinstance(self.reasoning_effort, list):
            return [self]
        if len(set(self.reasoning_effort)) != len(self.reasoning_effort):
            raise ValueError(f"model {self.name!r}: reasoning_effort lists an effort twice")
        return [self.model_copy(update=effort_seat(self.name, self.display_name, effort)) for effort in self.reasoning_effort]

    @model_validator(mode="before")
    @classmethod
    def _url_in_spec(cls, data: Any) -> Any:
        """``PROVIDER/MODEL@URL`` in ``spec`` means ``spec = PROVIDER/MODEL`` and ``base_url = URL``,
        as on the command line (see :func:`agorabench.models.spec.split_url`)."""
        if isinstance(data, dict) and isinstance(data.get("spec"), str) and "@" in data["spec"] and spec_kind(data["spec"].strip()) != "outside":
            spec, url = split_url(data["spec"], data.get("base_url"))
            data = {**data, "spec": spec, "base_url": url}
        return data

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        """``base_url`` is an http(s) URL with a host (and a numeric port, if any)."""
        return v if v is None else check_base_url(v)

    @field_validator("params")
    @classmethod
    def _finite_params(cls, v: dict[str, Any]) -> dict[str, Any]:
        """Every number in ``params`` is finite, as every other setting is (no inf, no NaN)."""
        for key, value in v.items():
            _check_finite(f"params.{key}", value)
        return v

    @property
    def label(self) -> str:
        return self.display_name or self.name

    def seat_label(self, seat: int) -> str:
        """The name players are shown for this entry in seat ``seat`` (0, 1, ...): the display
        name if set, else the model's name; a scripted player or a person without a display name
        is a neutral "Player A", "Player B", ... so the name never tells which strategy it plays
        or that a person sits there, and so is a model whose name is a provider spec or a URL
        (``--model openai/gpt-4o-mini`` names it so): a spec never reaches a prompt."""
        if self.display_name:
            return self.display_name
        return f"Player {chr(ord('A') + seat)}" if self.is_strategy or self.is_human or self.name_is_spec else self.name

    @property
    def name_is_spec(self) -> bool:
        """Whether the name is the entry's spec, or looks like one (``PROVIDER/MODEL``, a URL)."""
        return self.name == self.spec or any(c in self.name for c in "/@:")

    @property
    def model_spec(self) -> ModelSpec:
        """The spec and base URL parsed (:func:`agorabench.models.spec.parse_spec`, cached);
        SpecError (a ValueError) for a hosted spec with neither a known provider nor a URL."""
        return parse_spec(self.spec, self.base_url, owner=self.name)

    @property
    def kind(self) -> SeatKind:
        """Who plays this entry's seats (:func:`agorabench.core.seats.seat_kind`: by the spec)."""
        return kind_of_spec(self.spec)

    @property
    def is_strategy(self) -> bool:
        return self.kind is SeatKind.STRATEGY

    @property
    def is_human(self) -> bool:
        """A seat for a person (``spec = "human"``), played through ``agora serve``."""
        return self.kind is SeatKind.PERSON

    @property
    def is_outside(self) -> bool:
        """An outside agent (``spec = "http/URL"``): a program of the researcher's own, asked
        over HTTP for each decision (:class:`agorabench.core.agents.OutsideAgent`)."""
        return self.kind is SeatKind.OUTSIDE


def _check_finite(name: str, value: Any) -> None:
    """ValueError naming ``name`` for a float that is infinite or NaN (in lists and tables too)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(f"{name}.{key}", item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(f"{name}[{i}]", item)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} = {value} is not a finite number")


MATCHUPS = ("ordered_pairs", "all_pairs", "same_model", "seats")


def _no_empty_lists(grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
    for key, values in grid.items():
        if not values:
            raise ValueError(f"grid.{key} is an empty list (it would play no configuration); give at least one value")
    return grid


class StudyPart(BaseModel):
    """One game of a study that plays several games (``[[parts]]``): its own grid, fixed
    parameters and explicit configs; models, seats, repeats and seed are the study's."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    game: str
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    fixed: dict[str, Any] = Field(default_factory=dict)
    configs: list[dict[str, Any]] = Field(default_factory=list)
    #: Configurations per seating for this part (default: the study's ``sample``).
    sample: int | None = Field(None, ge=1)
    #: This game's seatings when the study's ``matchups = "seats"`` (its roles are its own):
    #: they replace the study's ``seats`` for this part; empty: the study's.
    seats: list[dict[str, str]] = Field(default_factory=list)

    @field_validator("grid")
    @classmethod
    def _grid_lists(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return _no_empty_lists(v)


class StudyFile(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=200, pattern=r"\S")
    #: The study's game; may be left out when ``parts`` lists the games.
    game: str = ""
    description: str = ""
    repeats: int = Field(1, ge=1, le=100_000)
    #: Any integer a 64-bit database column holds once mixed into a game's seed.
    seed: int = Field(0, ge=-(2**62), le=2**62)
    matchups: str = "ordered_pairs"
    seats: list[dict[str, str]] = Field(default_factory=list)
    #: Play only this many configurations per seating (ordered pair), drawn from the grid.
    sample: int | None = Field(None, ge=1)
    prompts: str | None = None
    #: Play stored games again whose prompt version (the ``VERSION`` of the templates they were
    #: played with) is not the version of the templates now in force; off: they are kept and
    #: count as done, and the run says how many in one line.
    replay_on_prompt_change: bool = False
    max_retries: int = Field(2, ge=0, le=20)
    #: A language model whose turns are invalid this many times in a row (after re-asks) stops:
    #: its remaining games of the run end as errors (played again by the next run), so a model
    #: that answers nothing usable is not paid for game after game; 0: never stop.
    stop_after_invalid: int = Field(20, ge=0, le=1_000_000)
    #: Most games the study may expand to; a larger design is refused before it is expanded.
    max_games: int = Field(MAX_GAMES, ge=1, le=10**12)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    fixed: dict[str, Any] = Field(default_factory=dict)
    configs: list[dict[str, Any]] = Field(default_factory=list)
    #: Several games in one study, each with its own grid (instead of game/grid/fixed/configs).
    parts: list[StudyPart] = Field(default_factory=list)
    models: list[ModelEntry] = Field(min_length=1)
    #: Settings every language model of the study takes unless its entry sets them, those given
    #: with ``--model`` included (e.g. ``temperature = "default"``); scripted players ignore them.
    model_defaults: dict[str, Any] = Field(default_factory=dict)
    #: Settings of the participant web app (``[web]``: consent, quiz, time limit, bonus...),
    #: validated by ``agorabench.web.settings.WebSettings`` when the study is served.
    web: dict[str, Any] = Field(default_factory=dict)
    #: Settings of the analysis, e.g. ``reference_model`` (the model effects are relative to).
    analysis: dict[str, Any] = Field(default_factory=dict)

    @field_validator("grid")
    @classmethod
    def _grid_lists(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return _no_empty_lists(v)

    @field_validator("matchups")
    @classmethod
    def _known_matchups(cls, v: str) -> str:
        if v not in MATCHUPS:
            raise ValueError(f"unknown matchups {v!r}; use one of {', '.join(MATCHUPS)}")
        return v

    @model_validator(mode="after")
    def _game_or_parts(self) -> "StudyFile":
        if self.parts and (self.grid or self.fixed or self.configs):
            raise ValueError("a study with parts sets grid, fixed and configs inside each part")
        if not self.parts and not self.game:
            raise ValueError("a study needs a game (or parts, each naming its game)")
        for i, part in enumerate(self.parts):
            if part.seats and self.matchups != "seats":
                raise ValueError(f"parts[{i}] ({part.game}) lists seats, which only a study with matchups = \"seats\" uses (it has {self.matchups!r})")
        return self

    @property
    def games(self) -> list[str]:
        """Every game the study plays, in order."""
        return list(dict.fromkeys(p.game for p in self.parts)) if self.parts else [self.game]


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One game to play: the game, its configuration, who sits where, which repeat."""

    id: str
    game: str
    config: dict[str, Any]
    seats: dict[str, str]
    repeat: int
    seed: int
    #: Seed of nature's draws (qualities, ties): the game, configuration, repeat and study seed
    #: only, so every seating of a configuration and repeat meets the same draws (None: ``seed``).
    nature_seed: int | None = None


def _json(value: Any) -> str:
    """Sorted-key JSON with the default separators (as ``json.dumps(..., sort_keys=True)``)."""
    return json.dumps(value, sort_keys=True)


def _json_around(parts: dict[str, str], hole: str) -> tuple[str, str]:
    """The text before and after the value of ``hole`` in the sorted-key JSON object of the
    already dumped ``parts`` plus ``hole``: the same text as ``json.dumps(..., sort_keys=True)``
    once an integer is put between them."""
    text = "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in sorted({**parts, hole: "\0"}.items())) + "}"
    before, after = text.split("\0")
    return before, after


def game_digest(study: str, game: str, config: dict[str, Any], seats: dict[str, Any], repeat: int, seed: int, prompts: Any) -> str:
    """A game's id: the first 24 hex digits of SHA-256 over the sorted-key JSON of what defines
    it (study, game, configuration, the seats' model entries, repeat, study seed, prompt folder)."""
    ident = {"study": study, "game": game, "config": config, "seats": seats, "repeat": repeat, "seed": seed, "prompts": prompts}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]


def nature_seed(game: str, config: dict[str, Any], repeat: int, seed: int) -> int:
    """Common random numbers: a seed from what defines the situation, never from the players."""
    ident = json.dumps({"game": game, "config": config, "repeat": repeat, "seed": seed}, sort_keys=True)
    return int(hashlib.sha256(ident.encode()).hexdigest()[:16], 16)


def sample_indices(n_configs: int, k: int, seating: dict[str, str], game: str, seed: int) -> list[int]:
    """The ``k`` configurations (indices into the seating's configurations) one seating plays in
    a sampled design.

    Drawn without replacement by a generator seeded from the seating, the game and the study
    seed only, so each seating gets exactly ``min(k, n_configs)`` configurations, the draw is
    reproducible, and adding a model leaves every existing seating's sample unchanged."""
    rng = random.Random(json.dumps({"game": game, "seats": seating, "seed": seed}, sort_keys=True))
    return sorted(rng.sample(range(n_configs), min(k, n_configs)))


@dataclass
class Study:
    file: StudyFile
    game_cls: type[Game]
    root: Path
    models: dict[str, ModelEntry] = field(default_factory=dict)
    #: Game classes by name when the study has parts (``game_cls`` is then the first part's).
    game_classes: dict[str, type[Game]] = field(default_factory=dict)
    #: ``--model`` replaced the models of a study that assigns seats (``matchups = "seats"``).
    seats_replaced: bool = False

    def game_class(self, name: str) -> type[Game]:
        return self.game_classes.get(name) or self.game_cls

    def _parts(self) -> list[StudyPart]:
        f = self.file
        return f.parts or [StudyPart(game=f.game, grid=f.grid, fixed=f.fixed, configs=f.configs)]

    def _sample(self, part: StudyPart) -> int | None:
        return part.sample or self.file.sample

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def prompt_dir(self) -> Path | None:
        """The folder of template overrides, relative to the folder of the study file's real
        path (``root``: a symlinked study file reads the templates beside the file it links to)."""
        if self.file.prompts is None:
            return None
        path = Path(self.file.prompts)
        return path if path.is_absolute() else (self.root / path)

    def configurations(self, part: StudyPart | None = None) -> list[Any]:
        """Every configuration of the grid (plus explicit ``configs``), validated by the game;
        with parts, those of ``part`` (or of every part when none is given)."""
        if part is None:
            return [c for p in self._parts() for c in self.configurations(p)]
        game_cls = self.game_class(part.game)
        keys = list(part.grid)
        combos = [dict(zip(keys, values)) for values in itertools.product(*(part.grid[k] for k in keys))] if keys else []
        raw = [{**part.fixed, **c} for c in combos] + [{**part.fixed, **c} for c in part.configs]
        if not raw:
            raw = [dict(part.fixed)]
        out = []
        for values in raw:
            try:
                out.append(game_cls.Config(**values))
            except ValidationError as exc:
                first = exc.errors()[0]
                raise StudyError(f"study {self.name!r}: invalid configuration {values}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        return out

    def seatings(self, config: Any, game_cls: type[Game] | None = None) -> list[dict[str, str]]:
        """Role -> model name assignments for one configuration (of the game ``game_cls``,
        default the study's first; its part's own seats where it lists them)."""
        cls = game_cls or self.game_cls
        part = next((p for p in self._parts() if p.game == cls.name), None)
        return list(self._seatings(cls.roles(config), part))

    def _seatings(self, roles: tuple[str, ...], part: StudyPart | None = None) -> Iterator[dict[str, str]]:
        """The seatings of a configuration with these roles (of ``part``), one at a time
        (10,000 models make 10^8 ordered pairs: they are never all in memory)."""
        names = list(self.models)
        mode = self.file.matchups
        if mode == "seats":
            yield from self._seat_list(roles, part)
        elif mode == "same_model" or len(names) == 1:
            yield from ({r: n for r in roles} for n in names)
        elif len(roles) == 1:
            yield from ({roles[0]: n} for n in names)
        elif mode == "ordered_pairs":
            yield from (dict(zip(roles, combo)) for combo in itertools.permutations(names, len(roles)))
        else:
            yield from (dict(zip(roles, combo)) for combo in itertools.product(names, repeat=len(roles)))

    def _seat_list(self, roles: tuple[str, ...], part: StudyPart | None = None) -> list[dict[str, str]]:
        """The study file's ``seats`` (or the part's own, where it lists them) for these roles
        (``matchups = "seats"``), checked."""
        out = []
        for seat in (part.seats if part is not None and part.seats else self.file.seats):
            expanded = _expand_seats(seat, roles)
            unknown = set(expanded.values()) - set(self.models)
            if unknown:
                raise StudyError(f"study {self.name!r}: seats name unknown model(s) {sorted(unknown)}")
            out.append(expanded)
        return out

    def _count_seatings(self, roles: tuple[str, ...], part: StudyPart | None = None) -> int:
        """How many seatings :meth:`_seatings` yields, by arithmetic."""
        n, mode = len(self.models), self.file.matchups
        if mode == "seats":
            return len(self._seat_list(roles, part))
        if mode == "same_model" or n == 1 or len(roles) == 1:
            return n
        return math.perm(n, len(roles)) if mode == "ordered_pairs" else n ** len(roles)

    def count_games(self) -> int:
        """How many games the design expands to, counted without expanding it: per part,
        configurations × seatings × repeats (sampled: each seating's ``min(sample, its
        configurations)``). StudyError, naming the count, when it exceeds ``max_games``; a grid
        with more configurations than that is refused before its configurations are built."""
        limit, total, parts = self.file.max_games, 0, self._parts()
        for n, part in enumerate(parts, 1):
            raw = (math.prod(len(v) for v in part.grid.values()) if part.grid else 0) + len(part.configs)
            if raw > limit:
                raise StudyError(f"study {self.name!r}: the grid of {part.game} has {raw:,} configurations, more than max_games = {limit:,}; shrink the grid or raise max_games")
            total += self._count_cells(part, self.configurations(part))
            games = total * self.file.repeats
            if games > limit:
                at_least = "at least " if n < len(parts) else ""
                raise StudyError(f"study {self.name!r} expands to {at_least}{games:,} games, more than max_games = {limit:,}; lower repeats, the grid or the models (or raise max_games in the study file)")
        return total * self.file.repeats

    def _count_cells(self, part: StudyPart, configs: list[Any]) -> int:
        """(configuration, seating) cells of one part, by arithmetic."""
        game_cls = self.game_class(part.game)
        by_roles = collections.Counter(game_cls.roles(c) for c in configs)
        k = self._sample(part)
        cells = 0
        for roles, n_configs in by_roles.items():
            if k is None:
                cells += n_configs * self._count_seatings(roles, part)
            elif self.file.matchups == "seats":  # a seating listed twice is sampled from twice the cells
                seen = collections.Counter(_json(seat) for seat in self._seat_list(roles, part))
                cells += sum(min(k, m * n_configs) for m in seen.values())
            else:
                cells += self._count_seatings(roles, part) * min(k, n_configs)
        return cells

    def check_roles(self) -> None:
        """Every scripted strategy plays the roles the design gives it (one that declares
        ``plays`` plays only those): StudyError naming the strategy, the role and the roles it
        plays, before any game (such a game would only store an error). ``ordered_pairs``,
        ``all_pairs`` and ``same_model`` put every model in every role, so a strategy of some
        roles only is seated with ``matchups = "seats"``; a grid larger than ``max_games`` is
        left to :meth:`count_games`, and an unknown strategy to the run's check."""
        scripted = {name: entry.model_spec.name for name, entry in self.models.items() if entry.is_strategy}
        if not scripted:
            return
        mode = self.file.matchups
        for part in self._parts():
            known = strategies(part.game)
            plays = {name: tuple(getattr(known[key], "plays", ()) or ()) for name, key in scripted.items() if key in known}
            plays = {name: roles for name, roles in plays.items() if roles}
            raw = (math.prod(len(v) for v in part.grid.values()) if part.grid else 0) + len(part.configs)
            if not plays or raw > self.file.max_games:
                continue
            game_cls = self.game_class(part.game)
            for roles in dict.fromkeys(game_cls.roles(c) for c in self.configurations(part)):
                if mode == "seats":
                    seatings = self._seat_list(roles, part)
                elif next(self._seatings(roles, part), None) is None:
                    continue  # no game to play: the run says why
                else:
                    seatings = [{role: name for role in roles} for name in self.models]
                for seating in seatings:
                    for role, name in seating.items():
                        allowed = plays.get(name)
                        if allowed and role not in allowed:
                            raise StudyError(self._role_problem(part.game, seating, role, name, f"strategy/{scripted[name]}", allowed))

    def _role_problem(self, game: str, seating: dict[str, str], role: str, name: str, strategy: str, allowed: tuple[str, ...]) -> str:
        """The one line that says a strategy was given a role it cannot play, and how to seat it."""
        who = f"model {name!r} ({strategy})" if strategy != f"strategy/{name}" else strategy
        what = f"{who} cannot play the role {role!r} of {game}: it plays only {', '.join(allowed)}"
        if self.file.matchups == "seats":
            return f"study {self.name!r}: seats {seating}: {what}; seat it in {'that role' if len(allowed) == 1 else 'one of those roles'}"
        example = f'{{ "*" = "<another model>", {allowed[0]} = "{name}" }}'
        return f"study {self.name!r}: {what}; matchups = \"{self.file.matchups}\" puts every model in every role: list the seatings with matchups = \"seats\", e.g. seats = [{example}]"

    def check_keys(self, environ: dict[str, str] | None = None) -> None:
        """A model entry that names its key's variable (``api_key_env``) must find it set: a
        missing key is a StudyError before anything runs, never a run without a key."""
        env = os.environ if environ is None else environ
        for entry in self.models.values():
            if "api_key_env" in entry.model_fields_set and spec_kind(entry.spec) in ("hosted", "outside") and not env.get(entry.api_key_env):
                raise StudyError(f"model {entry.name!r}: api_key_env = {entry.api_key_env!r}, but {entry.api_key_env} is not set in the environment")

    def has_human(self, spec: GameSpec) -> bool:
        """Whether a person sits in one of the game's seats."""
        return any(m in self.models and self.models[m].is_human for m in spec.seats.values())

    def expand(self) -> list[GameSpec]:
        """Every game of the study; a design that yields no game at all, or more than
        ``max_games``, is a StudyError (counted first, see :meth:`count_games`)."""
        specs = list(self.iter_specs())
        if not specs:
            raise StudyError(self._no_games())
        return specs

    def first_games(self) -> dict[str, tuple[GameSpec, set[str]]]:
        """Per game the study plays: its first game and the models seated in any of its games,
        found without expanding the design (every model when the study does not list seats)."""
        out: dict[str, tuple[GameSpec, set[str]]] = {}
        for part in self._parts():
            first = next(iter(self._expand_part(part)), None)
            if first is None:
                continue
            if self.file.matchups == "seats":
                game_cls = self.game_class(part.game)
                roles = {game_cls.roles(c) for c in self.configurations(part)}
                names = {m for r in roles for seat in self._seat_list(r, part) for m in seat.values()}
            else:
                names = set(self.models)
            out.setdefault(part.game, (first, set()))[1].update(names)
        return out

    def check_size(self) -> int:
        """The number of games, counted without expanding the design; StudyError for a design
        with no game or more than ``max_games``."""
        n = self.count_games()
        if n == 0:
            raise StudyError(self._no_games())
        return n

    def iter_specs(self) -> Iterator[GameSpec]:
        """Every game of the study, one at a time and in :meth:`expand`'s order, after the
        design has been counted against ``max_games`` (StudyError before the first game)."""
        self.count_games()
        for part in self._parts():
            yield from self._expand_part(part)

    def _no_games(self) -> str:
        part = self._parts()[0]
        roles = self.game_class(part.game).roles(self.configurations(part)[0])
        why = f"study {self.name!r} has no game to play: matchups = {self.file.matchups!r} with {len(self.models)} model(s) cannot fill the {len(roles)} roles of {part.game}"
        if self.seats_replaced:
            return why + " (--model replaces a seat-based study's seats by every ordering of the given models; edit the seats in the study file instead)"
        return why + ' (use matchups = "same_model" or "seats", or list more models)'

    def _cells(self, part: StudyPart, configs: list[Any]) -> Iterator[tuple[int, dict[str, str]]]:
        """The part's (configuration index, seating) cells in order, one at a time; with
        ``sample = N`` each seating keeps only its own N configurations (:func:`sample_indices`
        over the cells it appears in), in configuration order, only the sampled cells held."""
        game_cls = self.game_class(part.game)
        k = self._sample(part)
        if k is None:
            for i, config in enumerate(configs):
                for seats in self._seatings(game_cls.roles(config), part):
                    yield i, seats
            return
        # a seating's cells: every configuration whose roles it fills, as often as it is listed
        by_roles: dict[tuple[str, ...], list[int]] = {}
        for i, config in enumerate(configs):
            by_roles.setdefault(game_cls.roles(config), []).append(i)
        order: dict[str, int] = {}  # seatings in the order they first appear in the unsampled cells
        picked: dict[int, list[tuple[int, dict[str, str]]]] = {}
        for roles, indices in sorted(by_roles.items(), key=lambda item: item[1][0]):
            listed = list(self._seatings(roles, part))
            times = collections.Counter(_json(seat) for seat in listed)
            for seats in listed:
                key = _json(seats)
                if key in order:
                    continue
                order[key] = len(order)
                m = times[key]
                for j in sample_indices(len(indices) * m, k, seats, part.game, self.file.seed):
                    picked.setdefault(indices[j // m], []).append((order[key], seats))
        for i in sorted(picked):
            for _, seats in sorted(picked[i], key=lambda pick: pick[0]):
                yield i, seats

    def _expand_part(self, part: StudyPart) -> Iterator[GameSpec]:
        """Every (configuration, seating, repeat) of the part, one at a time."""
        configs = self.configurations(part)
        entries = {m: self.models[m].identity() for m in self.models}
        dumped = [configs[i].model_dump(mode="json") for i in range(len(configs))]
        fixed = {"study": _json(self.name), "game": _json(part.game), "seed": _json(self.file.seed), "prompts": _json(self.file.prompts)}
        for i, seats in self._cells(part, configs):
            cfg = dumped[i]
            cfg_json = _json(cfg)
            # the JSON texts of game_digest and nature_seed, built around the repeat from parts dumped once
            ident = _json_around({**fixed, "config": cfg_json, "seats": _json({r: entries[m] for r, m in seats.items()})}, "repeat")
            situation = _json_around({"game": fixed["game"], "config": cfg_json, "seed": fixed["seed"]}, "repeat")
            seats = dict(seats)  # one dict shared by the cell's repeats (as ``cfg`` is), never changed
            for repeat in range(self.file.repeats):
                digest = hashlib.sha256(f"{ident[0]}{repeat}{ident[1]}".encode()).hexdigest()[:24]
                nature = int(hashlib.sha256(f"{situation[0]}{repeat}{situation[1]}".encode()).hexdigest()[:16], 16)
                yield GameSpec(digest, part.game, cfg, seats, repeat, int(digest[:12], 16) ^ self.file.seed, nature)


def _expand_seats(seat: dict[str, str], roles: tuple[str, ...]) -> dict[str, str]:
    """A seat entry may use ``"*"`` for every role not named explicitly."""
    default = seat.get("*")
    out = {}
    for role in roles:
        if role in seat:
            out[role] = seat[role]
        elif default is not None:
            out[role] = default
        else:
            raise StudyError(f"seat assignment {seat} has no model for role {role!r}")
    return out


def seat_entries(models: list[ModelEntry]) -> dict[str, ModelEntry]:
    """The study's models by name, an entry with several reasoning efforts once per effort
    (:meth:`ModelEntry.efforts`); ValueError for a name that appears twice."""
    entries: dict[str, ModelEntry] = {}
    for listed in models:
        for entry in listed.efforts():
            if entry.name in entries:
                raise ValueError(f"model name {entry.name!r} appears twice")
            entries[entry.name] = entry
    return entries


def parse_model_spec(spec: str) -> ModelEntry:
    """A model from a command-line spec: ``local``, ``strategy/NAME``, ``openai/MODEL``,
    or ``PROVIDER/MODEL@http://host:port/v1``."""
    spec = spec.strip()
    if not spec:
        raise StudyError("empty model spec")
    name, url = split_url(spec)  # the model is named by its spec without the URL
    try:
        return ModelEntry(name=name, spec=name, base_url=url)
    except ValidationError as exc:
        problem = "; ".join(str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors())
        raise StudyError(f"--model {redact(spec)!r}: {problem}") from None


def _model_defaults(path: Path, defaults: Any) -> dict[str, Any]:
    """The study file's ``model_defaults``: settings of a model entry, not its name or spec,
    each checked against that setting's type in :class:`ModelEntry` (a wrong value is named as
    ``model_defaults.KEY``, not as the first entry it would reach)."""
    if defaults is None:
        return {}
    if not isinstance(defaults, dict):
        raise StudyError(f"{path}: model_defaults must be a table of model settings")
    fixed = {"name", "spec", "display_name", "base_url"}
    unknown = sorted(k for k in defaults if k not in ModelEntry.model_fields or k in fixed)
    if unknown:
        raise StudyError(f"{path}: model_defaults: {unknown[0]!r} is not a setting every model can share (e.g. temperature, max_tokens, timeout)")
    for key, value in defaults.items():
        info = ModelEntry.model_fields[key]
        try:
            TypeAdapter(Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation).validate_python(value)
        except ValidationError as exc:
            raise StudyError(f"{path}: model_defaults.{key}: {exc.errors()[0]['msg']}") from None
    return dict(defaults)


def with_defaults(entry: Any, defaults: dict[str, Any]) -> Any:
    """A model entry (a dict of the study file) with the study's ``model_defaults`` under its
    own settings: the one merge rule. Only a language model's entry (local or hosted) takes
    them; a scripted player's, a person's or an outside agent's is returned as it is."""
    if not defaults or not isinstance(entry, dict):
        return entry
    if spec_kind(split_url(str(entry.get("spec", "")).strip())[0]) not in ("local", "hosted"):
        return entry
    return {**defaults, **entry}


#: The most values a study file may expand to through YAML aliases (beyond what it spells out).
MAX_EXPANDED_VALUES = 100_000


def _aliases_problem(data: Any) -> str | None:
    """Why YAML aliases make ``data`` unusable, or None: a value that contains itself, or one
    that expands (every alias counted as the values it stands for) to more than
    :data:`MAX_EXPANDED_VALUES` values and more than twice those written out (an "alias bomb"
    of nine lists of nine would be 387 million values). Counted once per distinct list or
    table, so the check takes time in the size of the file, not of its expansion."""
    sizes: dict[int, int] = {}
    busy: set[int] = set()

    def size(value: Any) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in busy:
            raise _SelfContained
        busy.add(key)
        items = value.values() if isinstance(value, dict) else value
        total = 1 + sum(size(v) for v in items) + (len(value) if isinstance(value, dict) else 0)
        busy.discard(key)
        sizes[key] = total
        return total

    try:
        expanded = size(data)
    except _SelfContained:
        return "a value contains itself (a YAML alias to a list or table it is part of)"
    except RecursionError:
        return "lists or tables nested too deep"
    written = sum(1 + len(v) * (2 if isinstance(v, dict) else 1) for v in _containers(data))
    if expanded > MAX_EXPANDED_VALUES and expanded > 2 * written:
        return f"YAML aliases expand the study to {expanded:,} values (more than {MAX_EXPANDED_VALUES:,}; an alias bomb?); write the values out or use fewer aliases"
    return None


class _SelfContained(Exception):
    """A list or table found inside itself."""


def _containers(data: Any) -> list[Any]:
    """Each distinct list and table in ``data`` once (aliases point to one object)."""
    seen: dict[int, Any] = {}
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, (dict, list)) and id(value) not in seen:
            seen[id(value)] = value
            stack.extend(value.values() if isinstance(value, dict) else value)
    return list(seen.values())


def load_study(path: str | Path, models: list[str] | None = None) -> Study:
    """Read and validate a study file; ``models`` (command-line specs) replace its models."""
    path = Path(path)
    if not path.exists():
        raise StudyError(f"study file not found: {path}")
    if not path.is_file():
        raise StudyError(f"{path} is a folder, not a study file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise StudyError(f"{path}: not UTF-8 text (byte {exc.start}); save the study file as UTF-8") from None
    except OSError as exc:
        raise StudyError(f"cannot read study file {path}: {exc.strerror or exc}") from None
    if path.suffix in (".yaml", ".yml"):
        import yaml  # only for a YAML study file (every run of a TOML one would pay its import)

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise StudyError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise StudyError(f"{path}: not valid TOML: {str(exc).splitlines()[0]}") from None
    problem = _aliases_problem(data)
    if problem:
        raise StudyError(f"{path}: {problem}")
    if not isinstance(data, dict):
        raise StudyError(f"{path}: a study file must be a table of settings")
    seats_replaced = bool(models) and data.get("matchups") == "seats"
    defaults = _model_defaults(path, data.get("model_defaults"))
    if models:
        data["models"] = [with_defaults(parse_model_spec(m).model_dump(exclude_unset=True), defaults) for m in models]
        if seats_replaced:
            data["matchups"] = "ordered_pairs"
            for part in data.get("parts") or []:  # every part's own seats are replaced too
                if isinstance(part, dict):
                    part.pop("seats", None)
    elif defaults and isinstance(data.get("models"), list):
        data["models"] = [with_defaults(m, defaults) for m in data["models"]]
    try:
        file = StudyFile(**data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "study"
        raise StudyError(f"{path}: {loc}: {first['msg']}") from None
    try:
        classes = {name: load_game(name) for name in file.games}
    except ValueError as exc:
        raise StudyError(f"{path}: {exc}") from None
    game_cls = classes[file.games[0]]
    try:
        entries = seat_entries(file.models)
    except ValueError as exc:
        raise StudyError(f"{path}: {exc}") from None
    # the prompt folder lies beside the file itself, not beside a link to it
    study = Study(file, game_cls, path.resolve().parent, entries, classes if file.parts else {}, seats_replaced)
    if study.prompt_dir is not None and not study.prompt_dir.is_dir():
        raise StudyError(f"{path}: prompt folder not found: {study.prompt_dir}")
    study.check_roles()
    return study
