"""One pass over a query text: what recall reads of each whitespace-free chunk, memoized together. Pure.

A query is read three ways: its tokens (``store.recall.tokenize``) and their match forms for the keyword
overlap, its code keys (``store.recall.code``) and its hashed-vector features (``store.recall.vectors``).
None of them spans whitespace (a word, a path, a dotted name or an identifier is inside one chunk), so a
text is the sequence of its chunks, and each distinct chunk is read once for all three, then memoized:
a warm query is one memo lookup per chunk plus a few joins, and a new chunk's pieces (words, stems,
hashes) are themselves memoized where they repeat. Frames (``File "x", line 3, in f``) and backticked
spans span whitespace; ``code.code_terms_of`` reads those from the whole text.

The results are the same as the three modules' own functions on the whole text: ``tokenize`` is the
chunks' tokens concatenated, the vector's bucket sums are sums of ±1 (integers, so the order of the
additions does not change them), the code keys are sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

from store.recall.code import ChunkKeys, CodeTerms, chunk_keys, code_terms_of
from store.recall.tokenize import chunk_tokens, match_form
from store.recall.vectors import Vector, embed_packed, token_features

# What recall reads of one chunk: ``tokenize``'s tokens, their match forms, ``code.chunk_keys``, and the
# tokens' ``vectors.token_features`` with each of the four byte fields joined (a plain tuple: a new
# chunk's cost is mostly Python object overhead, so it stays minimal).
Chunk = tuple[tuple[str, ...], tuple[str, ...], ChunkKeys, bytes, bytes, bytes, bytes]
_NO_FEATURES = (b"", b"", b"", b"")


@lru_cache(maxsize=1 << 16)
def read_chunk(chunk: str) -> Chunk:
    """``Chunk`` of one whitespace-free chunk of a text."""
    tokens = chunk_tokens(chunk)
    if len(tokens) == 1:
        token = tokens[0]
        word_buckets, word_signs, gram_buckets, gram_signs, _ = token_features(token)
        return (
            tokens,
            (match_form(token),),
            chunk_keys(chunk),
            word_buckets,
            word_signs,
            gram_buckets,
            gram_signs,
        )
    features = [token_features(t) for t in tokens]
    joined = tuple(map(b"".join, list(zip(*features, strict=True))[:4])) if features else _NO_FEATURES
    return (tokens, tuple(map(match_form, tokens)), chunk_keys(chunk), *joined)  # type: ignore[return-value]


@dataclass(frozen=True)
class TextTerms:
    """A text's tokens, its distinct match forms, its code terms and its meaning vector."""

    tokens: list[str]  # ``tokenize(text)``
    forms: list[str]  # the tokens' match forms without repeats, first-seen order
    code: CodeTerms  # ``code_terms(text)``
    vector: Vector  # ``embed(tokens)``


def read_text(text: str) -> TextTerms:
    """``TextTerms`` of ``text``, each distinct chunk read once (see the module docstring)."""
    chunks = list(map(read_chunk, text.split()))
    if not chunks:
        return TextTerms([], [], code_terms_of(text, ()), embed_packed(*_NO_FEATURES))
    tokens, forms, keys, *features = zip(*chunks, strict=True)  # one column per field, in text order
    return TextTerms(
        tokens=list(chain.from_iterable(tokens)),
        forms=list(dict.fromkeys(chain.from_iterable(forms))),
        code=code_terms_of(text, keys),
        vector=embed_packed(*map(b"".join, features)),
    )
