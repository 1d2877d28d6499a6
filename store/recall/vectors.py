"""Hashed-vector embeddings: deterministic feature hashing of words and character n-grams. Pure.

No model and no network: the match form of each of a text's tokens (``store.recall.tokenize.match_form``: its
stem, mapped through the coding lexicon) and the character trigrams of that form (``<timeout>`` →
``<ti``, ``tim``, …, ``ut>``) are hashed (BLAKE2b, so the same text gives the same vector in every
process) into ``DIM`` signed buckets. The word block and the n-gram block are each L2-normalized,
blended ``WORD_SHARE : 1 - WORD_SHARE`` and normalized again, so the cosine of two texts is the dot
product of their vectors. Words carry meaning; the n-grams bring related forms the stemmer keeps apart
close (``fetchjson``/``fetch``, ``cancellationtoken``/``cancel``).
"""

from __future__ import annotations

import hashlib
import math
import struct
import threading
from array import array
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from store.recall.tokenize import match_form

DIM = 1024  # buckets, a power of two: 4 KiB per entry; unrelated texts' cosine noise ~ 1/sqrt(DIM)
NGRAM = 3
WORD_SHARE = 0.6  # weight of the word block against the character n-gram block

Vector = npt.NDArray[np.float32]
# word bucket, word sign, n-gram buckets, n-gram signs (int64 / float64 bytes), n-gram count
Features = tuple[bytes, bytes, bytes, bytes, int]
_INT64 = struct.Struct("=q")  # native order, as numpy's int64 and float64 bytes
_FLOAT64 = struct.Struct("=d")
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


@lru_cache(maxsize=1 << 16)
def token_features(token: str) -> Features:
    """One token's features, packed: word bucket, word sign, n-gram buckets, n-gram signs (int64 and
    float64 bytes) and the n-gram count. Memoized, and packed so that a batch is one ``join`` away from
    a numpy array (building arrays from Python lists cost more than the hashing).
    """
    form = match_form(token)
    word_bucket, word_sign = _bucket("w:" + form)
    grams = [_bucket(g) for g in _ngrams(form)]
    return (  # array.array, not np.array: the same machine bytes at a fifth of the cost
        _INT64.pack(word_bucket),
        _FLOAT64.pack(word_sign),
        array("q", [b for b, _ in grams]).tobytes(),
        array("d", [s for _, s in grams]).tobytes(),
        len(grams),
    )


def _sparse_rows(
    flat: npt.NDArray[np.int64], values: npt.NDArray[np.float64], n: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Sum values sharing a flat index (row * DIM + bucket) and L2-normalize each row; stays sparse."""
    index, inverse = np.unique(flat, return_inverse=True)
    summed = np.bincount(inverse, weights=values, minlength=index.size)
    rows = index // DIM
    norms = np.sqrt(np.bincount(rows, weights=summed * summed, minlength=n))
    norms[norms == 0.0] = 1.0
    return index, summed / norms[rows]


@lru_cache(maxsize=1 << 16)
def _token_buckets(token: str) -> tuple[int, float, tuple[tuple[int, float], ...]]:
    """One token's features as Python numbers: word bucket, word sign, ``(bucket, sign)`` of each n-gram."""
    form = match_form(token)
    word_bucket, word_sign = _bucket("w:" + form)
    return word_bucket, word_sign, tuple(_bucket(g) for g in _ngrams(form))


def _embed_row(tokens: Sequence[str]) -> tuple[list[int], list[float]]:
    """One row of ``embed_many`` in plain Python, sparse: its buckets (ascending) and values (float64).

    The same arithmetic in the same order as the numpy path (``_sparse_rows``, whose ``bincount`` adds in
    input order): each block's sums are sums of ±1 (integers, exact in any order) over their norm, times
    the block's share; a bucket of both blocks adds the word value then the n-gram one; the blend's norm
    sums the squares in ascending bucket order. So the bytes are equal (tests/store/test_vectors_row.py).
    For one entry (an append) it costs less than numpy's dozen calls on arrays of a few hundred items.
    """
    words: dict[int, float] = {}
    grams: dict[int, float] = {}
    for token in tokens:
        word_bucket, word_sign, token_grams = _token_buckets(token)
        words[word_bucket] = words.get(word_bucket, 0.0) + word_sign
        for bucket, sign in token_grams:
            grams[bucket] = grams.get(bucket, 0.0) + sign
    blended: dict[int, float] = {}
    for block, share in ((words, WORD_SHARE), (grams, 1.0 - WORD_SHARE)):
        norm = math.sqrt(sum(v * v for v in block.values())) or 1.0
        for bucket, summed in block.items():
            value = summed / norm * share
            blended[bucket] = blended[bucket] + value if bucket in blended else value
    buckets = sorted(blended)
    total = 0.0
    for bucket in buckets:
        total += blended[bucket] * blended[bucket]
    norm = math.sqrt(total) or 1.0
    return buckets, [blended[b] / norm for b in buckets]


_PLAIN_ROWS = 2  # at most this many rows: ``_embed_row`` each (docs/decisions/0064-per-append-costs.md)


def embed_many(token_lists: Sequence[Sequence[str]]) -> Matrix:
    """Row-stacked ``embed`` of each token list: shape ``(len(token_lists), DIM)``, float32.

    Works on the few non-zero buckets (sparse) and writes the dense matrix once, with no temporary
    dense arrays and their page faults (figures: docs/decisions/0011-store.md, "Hashed vectors").
    One or two rows (an append's new entry) are computed in plain Python (``_embed_row``): the same bytes.
    """
    n = len(token_lists)
    if n <= _PLAIN_ROWS:
        plain = np.zeros((n, DIM), dtype=np.float32)
        for row, tokens in enumerate(token_lists):
            nonzero, weights = _embed_row(tokens)
            plain[row, nonzero] = weights
        return plain
    chunks: tuple[list[bytes], list[bytes], list[bytes], list[bytes]] = ([], [], [], [])
    word_counts: list[int] = []
    gram_counts: list[int] = []
    for tokens in token_lists:
        grams = 0
        for token in tokens:
            word_bucket, word_sign, gram_buckets, gram_signs, count = token_features(token)
            chunks[0].append(word_bucket)
            chunks[1].append(word_sign)
            chunks[2].append(gram_buckets)
            chunks[3].append(gram_signs)
            grams += count
        word_counts.append(len(tokens))
        gram_counts.append(grams)
    rows = np.arange(n, dtype=np.int64) * DIM
    index_parts = []
    value_parts = []
    for block, (counts, share) in enumerate(((word_counts, WORD_SHARE), (gram_counts, 1.0 - WORD_SHARE))):
        buckets = np.frombuffer(b"".join(chunks[2 * block]), dtype=np.int64)
        signs = np.frombuffer(b"".join(chunks[2 * block + 1]), dtype=np.float64)
        index, values = _sparse_rows(buckets + np.repeat(rows, counts), signs, n)
        index_parts.append(index)
        value_parts.append(values * share)
    index, values = _sparse_rows(np.concatenate(index_parts), np.concatenate(value_parts), n)
    matrix = np.zeros((n, DIM), dtype=np.float32)
    matrix.reshape(-1)[index] = values
    return matrix


def _unit(vector: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norm = float(np.sqrt(vector @ vector))
    return vector / norm if norm > 0.0 else vector


def embed(tokens: Sequence[str]) -> Vector:
    """The unit vector (``DIM`` float32) of a token list; all zeros for no tokens.

    The same numbers as ``embed_many([tokens])[0]``, computed densely (the fast path for one query):
    each distinct token's features are read once and weighed by its count (the block sums are sums of
    ±1, integers, so the order of the additions does not change them).
    """
    counts = Counter(tokens)
    features = [token_features(t) for t in counts]
    times = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    grams = np.fromiter((f[4] for f in features), dtype=np.int64, count=len(features))
    return _blend(
        (b"".join(f[0] for f in features), b"".join(f[1] for f in features), times),
        (b"".join(f[2] for f in features), b"".join(f[3] for f in features), np.repeat(times, grams)),
    )


def embed_packed(word_buckets: bytes, word_signs: bytes, gram_buckets: bytes, gram_signs: bytes) -> Vector:
    """``embed`` of the tokens whose ``token_features`` were joined into these four byte strings (one
    join per field, every occurrence of a token kept: the same sums as ``embed``'s counts)."""
    return _blend((word_buckets, word_signs, None), (gram_buckets, gram_signs, None))


def _blend(*blocks: tuple[bytes, bytes, npt.NDArray[np.float64] | None]) -> Vector:
    """The word block and the n-gram block (bucket bytes, sign bytes, per-feature weight), each summed
    per bucket and L2-normalized, blended ``WORD_SHARE : 1 - WORD_SHARE``, normalized again."""
    units = []
    for bucket_bytes, sign_bytes, weight in blocks:
        buckets = np.frombuffer(bucket_bytes, dtype=np.int64)
        signs = np.frombuffer(sign_bytes, dtype=np.float64)
        if weight is not None:
            signs = signs * weight
        units.append(_unit(np.bincount(buckets, signs, minlength=DIM).astype(np.float64)))
    vector: Vector = _unit(WORD_SHARE * units[0] + (1.0 - WORD_SHARE) * units[1]).astype(np.float32)
    return vector


def dot_rows(matrix: Matrix, vector: Vector) -> npt.NDArray[np.float64]:
    """``matrix @ vector`` using only the vector's non-zero buckets (a query touches few of ``DIM``).

    With a column-major ``matrix`` this gathers a few contiguous columns, and wakes no BLAS threads,
    whose spinning put a dense product's p99 far above its p50 on a busy machine (figures:
    docs/decisions/0011-store.md, "No BLAS products on hot paths").
    """
    nz = np.flatnonzero(vector)
    if matrix.shape[0] == 0 or nz.size == 0:
        return np.zeros(matrix.shape[0], dtype=np.float64)
    if nz.size * 2 > DIM:  # a long text touches most buckets: no gather, numpy's own loop (no BLAS)
        dense: npt.NDArray[np.float64] = np.einsum("ij,j->i", matrix, vector).astype(np.float64)
        return dense
    product: npt.NDArray[np.float64] = (matrix[:, nz] @ vector[nz]).astype(np.float64)
    return product


def cosine(a: Vector, b: Vector) -> float:
    """Cosine of two unit vectors from ``embed`` (0.0 when either is empty)."""
    return float(np.dot(a, b))


class VectorBuffer:
    """Meaning vectors (column-major) in a buffer that grows by doubling, shared by extending views.

    A view uses rows ``[0, n)``; extending writes rows ``n…`` in place when no other view has written
    past ``n`` yet, else it copies. So an append costs the new rows, not a copy of the whole matrix.
    """

    def __init__(self, data: Matrix, filled: int) -> None:
        """``data`` is the storage; rows ``[0, filled)`` hold vectors."""
        self.data = data
        self.filled = filled
        self._lock = threading.Lock()

    @classmethod
    def of(cls, matrix: Matrix) -> VectorBuffer:
        """A buffer holding exactly ``matrix``'s rows."""
        return cls(np.asfortranarray(matrix, dtype=np.float32), matrix.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the buffer."""
        return int(self.data.nbytes)

    def rows(self, n: int) -> Matrix:
        """The first ``n`` vectors (a view, not a copy)."""
        return self.data[:n]

    def subset(self, rows: Sequence[int]) -> VectorBuffer:
        """A new buffer holding ``rows`` of this one (in order), with room to grow.

        Copies runs of consecutive rows as 2-D slices: rotation and forget keep almost every row, and a
        slice copy of a column-major block is much cheaper than gathering its rows one by one
        (docs/performance.md, "Store at the cap").
        """
        count = len(rows)
        data = np.zeros((max(count + 64, count * 5 // 4), self.data.shape[1]), np.float32, order="F")
        start = 0
        while start < count:
            stop = start + 1
            while stop < count and rows[stop] == rows[stop - 1] + 1:
                stop += 1
            first = rows[start]
            data[start:stop] = self.data[first : first + (stop - start)]
            start = stop
        return VectorBuffer(data, count)

    def extended(self, n: int, new: Matrix) -> VectorBuffer:
        """A buffer whose rows ``[0, n)`` are these and whose next rows are ``new``."""
        needed = n + new.shape[0]
        with self._lock:
            if self.filled == n and needed <= self.data.shape[0]:
                self.data[n:needed] = new
                self.filled = needed
                return self
        capacity = needed + max(16, needed // 4)
        data = np.zeros((capacity, self.data.shape[1]), np.float32, order="F")
        data[:n] = self.data[:n]
        data[n:needed] = new
        return VectorBuffer(data, needed)
