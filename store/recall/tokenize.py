"""The one tokenizer behind the keyword index, recall queries and the hashed vectors. Pure.

Rules, in order:

1. Words are runs of unicode word characters (``\\w+``): paths, dotted names and punctuation split.
2. A word is split into parts at underscores and at ASCII camelCase boundaries
   (``getUserById`` → ``get``, ``user``, ``by``, ``id``; ``HTTPServerError`` → ``http``, ``server``,
   ``error``); an acronym's plural ``s`` is dropped, not split off (``JWTs`` → ``jwt``, ``getURLs`` →
   ``get``, ``url``). A compound word is also kept whole, so identifiers and error type names survive
   (``ValueError`` → ``valueerror``, ``value``, ``error``; ``get_user`` → ``get_user``, ``get``, ``user``).
3. Runs of CJK characters (no spaces between words) become overlapping character bigrams
   (``日本語`` → ``日本``, ``本語``), the usual trick for unsegmented scripts.
4. Everything is case-folded. Stopwords (English function words and the filler of every task, such as
   ``fix``, ``bug``, ``please``), one-character tokens and numbers under three digits are dropped.

Order is kept and duplicates are kept (callers that want a set make one). These tokens are what the
on-disk index holds.

Matching compares *match forms* (``match_form``), not tokens: the Porter2 stem of an ASCII word
(``retrying``, ``retries`` → ``retri``; ``segfaults`` → ``segfault``), then the name of its group in the
coding lexicon (``store.recall.lexicon``: ``segfault`` → ``crash``, ``cfg`` → ``config``). Keyword overlap and
hashed vectors both use them, for index keywords and queries alike; the index on disk keeps the plain
tokens, so logs and indexes written before (or by another version of) the rules need no rewrite.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from itertools import chain

import Stemmer

from store.recall.lexicon import groups

_WORD = re.compile(r"\w+")
_CJK_RUN = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[0-9A-Z])(?=[A-Z][a-z])")
_ACRONYM_PLURAL = re.compile(r"([A-Z]{2,})s(?![a-z])")  # JWTs, URLs, IDs: the s is no new word

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just let lets me more
    most my no nor not now of off on once only or other our ours out over own same she should so some
    such than that the their theirs them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    fix fixes fixed fixing bug bugs issue issues problem problems please thanks make sure need needs
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def _parts(word: str) -> list[str]:
    """The underscore and camelCase parts of one word, in order, not yet case-folded."""
    parts: list[str] = []
    for chunk in word.split("_"):
        if not chunk:
            continue
        if chunk.lower() == chunk:  # no capital: neither pattern can match (most words of prose)
            parts.append(chunk)
            continue
        singular = _ACRONYM_PLURAL.sub(_first_group, chunk)
        parts.extend(_CAMEL_BOUNDARY.sub(" ", singular).split())
    return parts


def _first_group(match: re.Match[str]) -> str:
    # A function, not the template r"\1": Python 3.11 parses a template on every ``sub`` call.
    return match[1]


def _keep(token: str) -> bool:
    if len(token) < 2 or token in STOPWORDS:
        return False
    return not (token.isdigit() and len(token) < 3)


def tokenize(text: str) -> list[str]:
    """The tokens of ``text`` (see the module docstring for the rules)."""
    # A word never spans whitespace: the text's whitespace-free chunks are tokenized once each
    # (memoized; chunks repeat across a text and across texts) and their tokens concatenated.
    return list(chain.from_iterable(map(chunk_tokens, text.split())))


@lru_cache(maxsize=1 << 16)
def chunk_tokens(chunk: str) -> tuple[str, ...]:
    """The tokens of one whitespace-free chunk of a text."""
    return tuple(chain.from_iterable(map(_word_tokens, _WORD.findall(chunk))))


@lru_cache(maxsize=1 << 16)
def _word_tokens(word: str) -> tuple[str, ...]:
    """The tokens of one ``\\w+`` word; memoized because words repeat across entries and queries."""
    if not _CJK_RUN.search(word):
        return tuple(_plain_tokens(word))
    tokens: list[str] = []
    for i, piece in enumerate(_CJK_RUN.split(word)):
        if not piece:
            continue
        if i % 2:  # a CJK run (the split pattern's capture group)
            tokens.extend([piece] if len(piece) == 1 else [piece[j : j + 2] for j in range(len(piece) - 1)])
        else:
            tokens.extend(_plain_tokens(piece))
    return tuple(tokens)


def _plain_tokens(word: str) -> list[str]:
    """The tokens of one word without CJK characters."""
    tokens: list[str] = []
    parts = _parts(word)
    if len(parts) > 1:
        whole = word.strip("_").casefold()
        if _keep(whole):
            tokens.append(whole)
    for part in parts:
        folded = part.casefold()
        if _keep(folded):
            tokens.append(folded)
    return tokens


def unique(tokens: list[str]) -> list[str]:
    """``tokens`` without repeats, first-seen order kept."""
    return list(dict.fromkeys(tokens))


_STEMMER = Stemmer.Stemmer("english")  # Porter2 (Snowball), in C; an instance is not thread-safe
_STEMMER_LOCK = threading.Lock()
_STEMMABLE = re.compile(r"[a-z]{3,}")


def _stem(token: str) -> str:
    """The Porter2 stem of an ASCII word of 3+ letters; any other token as it is."""
    if not _STEMMABLE.fullmatch(token):
        return token
    with _STEMMER_LOCK:
        stem: str = _STEMMER.stemWord(token)
    return stem


def _lexicon_map() -> dict[str, str]:
    """``{stem of a lexicon word: stem of its group name}``; ValueError if a stem is in two groups."""
    table: dict[str, str] = {}
    for group in groups():
        name = _stem(group[0])
        for word in group:
            stem = _stem(word)
            if table.setdefault(stem, name) != name:
                raise ValueError(f"lexicon word {word!r} (stem {stem!r}) is in two groups")
    return table


LEXICON: dict[str, str] = _lexicon_map()


@lru_cache(maxsize=1 << 16)
def match_form(token: str) -> str:
    """The form a token is compared in: its stem, mapped to its lexicon group (see the module docstring)."""
    stem = _stem(token)
    return LEXICON.get(stem, stem)


def match_forms(tokens: Iterable[str]) -> list[str]:
    """``match_form`` of each token, order and repeats kept."""
    return [match_form(t) for t in tokens]
