"""Hashed-vector embeddings: deterministic feature hashing of words and character n-grams. Pure.

No model and no network: a text's tokens (``store.tokenize``) and the character trigrams of each token
(``<timeout>`` → ``<ti``, ``tim``, …, ``ut>``) are hashed (BLAKE2b, so the same text gives the same
vector in every process) into ``DIM`` signed buckets. The word block and the n-gram block are each
L2-normalized, blended ``WORD_SHARE : 1 - WORD_SHARE`` and normalized again, so the cosine of two texts
is the dot product of their vectors. Words carry meaning; the n-grams make ``timeout``/``timeouts``
and ``login``/``logins`` close without a stemmer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

DIM = 2048  # buckets; a power of two
NGRAM = 3
WORD_SHARE = 0.6  # weight of the word block against the character n-gram block

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]


@lru_cache(maxsize=1 << 16)
def _bucket(feature: str) -> tuple[int, float]:
    """``(bucket, sign)`` of one feature string; memoized because features repeat a lot."""
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    value = int.from_bytes(digest, "little")
    return value & (DIM - 1), (1.0 if value >> 31 else -1.0)


@lru_cache(maxsize=1 << 15)
def _ngrams(token: str) -> tuple[str, ...]:
    padded = f"<{token}>"
    if len(padded) <= NGRAM:
        return (padded,)
    return tuple(padded[i : i + NGRAM] for i in range(len(padded) - NGRAM + 1))


def _block(features: Iterable[str], out: Vector) -> None:
    """Add the signed hashed counts of ``features`` into ``out`` and L2-normalize it in place."""
    for feature in features:
        bucket, sign = _bucket(feature)
        out[bucket] += sign
    norm = float(np.linalg.norm(out))
    if norm > 0.0:
        out /= norm


def embed(tokens: Sequence[str]) -> Vector:
    """The unit vector (``DIM`` float32) of a token list; all zeros for no tokens."""
    words = np.zeros(DIM, dtype=np.float32)
    grams = np.zeros(DIM, dtype=np.float32)
    _block(("w:" + t for t in tokens), words)
    _block((g for t in tokens for g in _ngrams(t)), grams)
    vector = WORD_SHARE * words + (1.0 - WORD_SHARE) * grams
    norm = float(np.linalg.norm(vector))
    if norm > 0.0:
        vector /= norm
    return vector.astype(np.float32, copy=False)


def embed_many(token_lists: Sequence[Sequence[str]]) -> Matrix:
    """Row-stacked ``embed`` of each token list: shape ``(len(token_lists), DIM)``."""
    matrix = np.zeros((len(token_lists), DIM), dtype=np.float32)
    for row, tokens in enumerate(token_lists):
        matrix[row] = embed(tokens)
    return matrix


def cosine(a: Vector, b: Vector) -> float:
    """Cosine of two unit vectors from ``embed`` (0.0 when either is empty)."""
    return float(np.dot(a, b))
