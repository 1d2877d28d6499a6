"""The meaning signal's adapter (the optional ``meaning`` extra): static embeddings of a query and of each
fix's request, and their cosines, which recall ranking takes as values (``ranking.rank``'s ``meaning``).

The model is ``wordllama``'s ``l2_supercat`` (256 dimensions), whose weights and tokenizer ship inside
its wheel: it is loaded with downloads disabled, so nothing is fetched at run time. An entry's vector is
computed once and kept by entry id (entries never change their request). Measured and set on
evals/related's tuning half (``python -m evals.related.meaning``,
docs/decisions/0062-meaning-signal-rescue.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from store.entry import FixEntry

Vectors = npt.NDArray[np.float32]
Embed = Callable[[list[str]], Vectors]
MAX_CACHED = 20_000  # entry vectors kept (1 KiB each); past it the cache starts over


class Meaning:
    """Cosines of a query with entries' requests, entry vectors cached by id; thread-safe."""

    def __init__(self, embed: Embed) -> None:
        """``embed(texts)``: one unit-length row per text."""
        self._embed = embed
        self._vectors: dict[str, Vectors] = {}
        self._mutex = threading.Lock()

    def cosines(self, entries: Sequence[FixEntry], query: str) -> npt.NDArray[np.float64]:
        """The cosine of ``query``'s embedding with each entry's request's, in ``entries`` order."""
        if not entries:
            return np.zeros(0)
        with self._mutex:
            missing = {e.id: e.task for e in entries if e.id not in self._vectors}
            if len(self._vectors) + len(missing) > MAX_CACHED:
                self._vectors.clear()
                missing = {e.id: e.task for e in entries}
            if missing:
                self._vectors.update(zip(missing, self._embed(list(missing.values())), strict=True))
            matrix = np.stack([self._vectors[e.id] for e in entries])
        result: npt.NDArray[np.float64] = (matrix @ self._embed([query])[0]).astype(np.float64)
        return result


def wordllama_embed() -> Embed:
    """``wordllama``'s embedding function, loaded from its wheel with downloads disabled.

    Raises ImportError without the extra, FileNotFoundError when the wheel holds no weights."""
    import wordllama  # noqa: PLC0415 - the optional extra, imported only when asked for

    model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)

    def embed(texts: list[str]) -> Vectors:
        vectors: Vectors = np.nan_to_num(model.embed(texts, norm=True))
        return vectors

    return embed


def load_meaning() -> Meaning | None:
    """The meaning signal when the ``meaning`` extra is installed and loads offline, else None."""
    try:
        return Meaning(wordllama_embed())
    except (ImportError, FileNotFoundError, OSError):
        return None


@cache
def shared_meaning() -> Meaning | None:
    """``load_meaning()`` once per process: every store of a process shares the model and its cache."""
    return load_meaning()
