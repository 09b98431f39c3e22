"""Which backend serves which spec: the providers hosted models are reached through, each with
the factory of its backend and its defaults (the environment variable holding its key, the
dialect its server speaks), and :func:`open_backend`, which builds the backend of a parsed spec.

A backend's module is imported when a model needs it, not before: a study of scripted players
imports no HTTP client, a ``lean`` transport no ``openai`` SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping
from urllib.parse import urlsplit

from .errors import SpecError

if TYPE_CHECKING:  # pragma: no cover
    from .base import Backend
    from .spec import ModelSpec

#: The key variable a model entry names unless told otherwise; a provider with a key of its own
#: (Anthropic) reads that one instead.
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


@dataclass(frozen=True)
class BackendOptions:
    """How a model entry asks for its calls to be made (everything but the spec)."""

    #: None or :data:`DEFAULT_KEY_ENV`: the provider's own variable.
    api_key_env: str | None = None
    timeout: float = 120.0
    #: OpenAI-compatible servers: the transport's name (see :mod:`agorabench.models.transport`).
    transport: str = "lean"
    prompt_caching: bool = True
    #: The embedded model: ``model_path`` and ``n_threads`` are read from here.
    params: Mapping[str, Any] = field(default_factory=dict)
    state_cache_mb: int | None = None
    #: OpenAI-compatible servers: the ``service_tier`` sent with every call (None: not sent), and
    #: whether a call its tier has no capacity for is made again at the standard tier.
    service_tier: str | None = None
    service_tier_fallback: bool = False
    #: OpenAI's own API: send ``prompt_cache_key`` (one per game and seat) with every call.
    prompt_cache_key: bool = True
    #: Anthropic: how long a prefix written to the prompt cache lives (``5m`` or ``1h``).
    cache_ttl: str = "5m"
    #: The Responses transport: the reasoning summary asked for (``auto``, ``concise``,
    #: ``detailed``; ``none``: none).
    reasoning_summary: str = "auto"


#: Seconds a call at the ``flex`` tier may take when its model entry sets no ``timeout``: flex
#: answers queue (OpenAI advises 15 minutes).
FLEX_TIMEOUT = 900.0


@dataclass(frozen=True)
class Provider:
    """One provider: ``factory(spec, options, provider)`` builds its backend."""

    name: str
    factory: Callable[["ModelSpec", BackendOptions, "Provider"], "Backend"]
    key_env: str = DEFAULT_KEY_ENV
    #: How constrained decoding and reasoning settings are asked for (see
    #: ``ChatCompletionsBackend._constraint`` and :mod:`agorabench.models.reasoning`).
    dialect: str = "openai"
    #: Where the provider's API is when a model names no base URL (None: OpenAI's).
    base_url: str | None = None

    def key_variable(self, options: BackendOptions) -> str:
        chosen = options.api_key_env
        return self.key_env if chosen in (None, DEFAULT_KEY_ENV) else chosen


def _chat_completions(spec: "ModelSpec", options: BackendOptions, provider: Provider) -> "Backend":
    from .openai_compat import ChatCompletionsBackend, is_openai_api

    base_url = spec.base_url or provider.base_url
    return ChatCompletionsBackend(
        spec.name,
        base_url=base_url,
        api_key_env=provider.key_variable(options),
        timeout=options.timeout,
        dialect=spec_dialect(spec),
        transport=options.transport,
        key_required=spec.base_url is None,
        service_tier=options.service_tier,
        service_tier_fallback=options.service_tier_fallback,
        # only OpenAI's own API gets the cache key: other servers may refuse a field they do not know
        prompt_cache_key=options.prompt_cache_key and provider.name == "openai" and is_openai_api(base_url),
        reasoning_summary=options.reasoning_summary,
    )


def _anthropic(spec: "ModelSpec", options: BackendOptions, provider: Provider) -> "Backend":
    from .anthropic import AnthropicBackend

    return AnthropicBackend(spec.name, base_url=spec.base_url, api_key_env=provider.key_variable(options), timeout=options.timeout, prompt_caching=options.prompt_caching, cache_ttl=options.cache_ttl)


def _openai_like(name: str, dialect: str = "openai", base_url: str | None = None, key_env: str = DEFAULT_KEY_ENV) -> Provider:
    return Provider(name, _chat_completions, dialect=dialect, base_url=base_url, key_env=key_env)


#: Providers by the prefix of their specs (``PROVIDER/MODEL``). The dialect says how reasoning
#: settings travel (:func:`agorabench.models.reasoning.chat_fields`).
PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider("anthropic", _anthropic, key_env="ANTHROPIC_API_KEY", dialect="anthropic"),
    "openai": _openai_like("openai"),
    "vllm": _openai_like("vllm", dialect="vllm"),
    "sglang": _openai_like("sglang", dialect="vllm"),
    "ollama": _openai_like("ollama", dialect="ollama"),
    "openrouter": _openai_like("openrouter", dialect="generic", base_url="https://openrouter.ai/api/v1"),
    "deepseek": _openai_like("deepseek", dialect="deepseek", base_url="https://api.deepseek.com"),
    "together": _openai_like("together", dialect="generic", base_url="https://api.together.xyz/v1"),
    "gemini": _openai_like("gemini", dialect="gemini", base_url="https://generativelanguage.googleapis.com/v1beta/openai", key_env="GEMINI_API_KEY"),
    "llamacpp": _openai_like("llamacpp", dialect="llamacpp"),  # llama.cpp's server: GBNF grammars
}

#: The provider of a spec with a base URL whose prefix is no provider's (``NAME@URL``).
GENERIC_PROVIDER = "openai"


def _on_openai_hosts(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API (none, or ``api.openai.com``) or Azure OpenAI
    (``*.openai.azure.com``)."""
    if base_url is None:
        return True
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return False
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def spec_dialect(spec: "ModelSpec") -> str:
    """The dialect a hosted spec's calls speak. OpenAI's reasoning form belongs to OpenAI's own
    API and Azure: a ``NAME@URL`` spec on any other server (Ollama, vLLM, llama.cpp, LM Studio,
    ...) speaks ``generic`` (``max_tokens``, the model's temperature and seed); one written
    ``openai/NAME@URL`` is taken at its word."""
    provider = PROVIDERS[spec.provider] if spec.provider in PROVIDERS else None
    if provider is None:
        return "generic"
    if provider.dialect == "openai" and not spec.text.startswith("openai/") and not _on_openai_hosts(spec.base_url or provider.base_url):
        return "generic"
    return provider.dialect


def open_backend(spec: "ModelSpec", options: BackendOptions | None = None) -> "Backend":
    """The backend of a local or hosted spec. BackendError where the backend cannot be made
    (a key missing from the environment, ...); SpecError for a spec no backend plays (a
    strategy, a person)."""
    options = options or BackendOptions()
    if spec.kind == "local":
        from .embedded import shared_embedded_backend

        return shared_embedded_backend(model_path=options.params.get("model_path"), n_threads=options.params.get("n_threads"), state_cache_mb=options.state_cache_mb)
    if spec.kind == "hosted" and spec.provider in PROVIDERS:
        provider = PROVIDERS[spec.provider]
        return provider.factory(spec, options, provider)
    raise SpecError(f"model spec {spec.text!r} is played without a backend ({spec.kind})")
