"""Secret redaction: every stored field and every recall answer passes through ``redact``.

Pure. Each rule replaces the secret (not its label) with ``[REDACTED]`` so the text stays readable:
``Authorization: Bearer [REDACTED]``, ``password=[REDACTED]``, ``https://[REDACTED]@host``.
It lives in ``store`` because both writers (extraction, in ``workers``) and readers (recall) need it and
``store`` may not import ``workers``.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"

# (name, pattern, replacement). Order matters: whole blocks and headers before token shapes, and a rule
# that reads the words around a match before any rule that could replace those words.
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
            r"( BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    (
        "authorization_header",
        re.compile(
            r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)?\s*)[^\s\"']+"
        ),
        r"\1" + REDACTED,
    ),
    ("bearer", re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + REDACTED),
    (
        "url_credentials",
        re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"),
        r"\1" + REDACTED + "@",
    ),
    (
        "aws_access_key_id",
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
        REDACTED,
    ),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})"),
        REDACTED,
    ),
    ("anthropic_or_openai_key", re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), REDACTED),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), REDACTED),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), REDACTED),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), REDACTED),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), REDACTED),
    ("slack_token", re.compile(r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}"), REDACTED),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"), REDACTED),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"), REDACTED),
    # Before secret_assignment: that rule may take the context word ("TOKEN=aws_secret_access_key = …"
    # loses "aws_secret_access_key"), and this one needs it to tell a secret from a hash.
    ("aws_secret_access_key", re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"), "AWS"),
    (
        "secret_assignment",
        re.compile(
            r"(?i)\b([A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|"
            r"private[_-]?key|client[_-]?secret)(?!iz|s\b|less)[A-Za-z0-9_.-]*[\"']?\s*[:=]\s*[\"']?)"
            r"(?!\[REDACTED\])([^\s\"'&;,(){}\[\]]{6,}+)(?![(\[])"
        ),
        r"\1" + REDACTED,
    ),
)


# Every rule above needs one of these substrings (case-insensitive: a superset of the case-sensitive
# rules). Text holding none of them cannot match any rule, so ``redact`` returns it untouched without
# running the patterns: most fields of most entries hold no anchor. Keep this in step with ``_RULES``;
# tests/store/test_redact_prefilter.py checks it.
_ANCHORS = (
    "-----begin",
    "authorization",
    "bearer",
    "://",
    "akia",
    "asia",
    "agpa",
    "aida",
    "aroa",
    "anpa",
    "anva",
    "aipa",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "sk-",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxo-",
    "xoxs-",
    "xoxr-",
    "xoxe-",
    "xapp-",
    "eyj",
    "passw",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "accesskey",
    "access_key",
    "access-key",
    "privatekey",
    "private_key",
    "private-key",
    "aws",
    "_live_",
    "_test_",
    "aiza",
    "glpat-",
    "npm_",
    "hf_",
)  # lowercase; every rule needs one of them


def _anchor_trie(anchors: list[str]) -> str:
    """A regex matching exactly where some of ``anchors`` starts, its branches merged by first character
    (``a(?:kia|sia|ws|...)|b...``): ``re`` then tries one branch at a position instead of each anchor."""
    if "" in anchors:  # a shorter anchor is a prefix of the others: it alone decides
        return ""
    by_first: dict[str, list[str]] = {}
    for anchor in anchors:
        by_first.setdefault(anchor[0], []).append(anchor[1:])
    branches = []
    for first, rests in sorted(by_first.items()):
        rest = _anchor_trie(rests)
        branches.append(re.escape(first) + (f"(?:{rest})" if "|" in rest else rest))
    return "|".join(branches)


_ANCHOR_SEARCH = re.compile(_anchor_trie(list(_ANCHORS))).search


def might_hold_secret(text: str) -> bool:
    """Whether ``text`` holds an anchor of some rule; False means ``redact`` would return it unchanged.

    One search of the lowercased text for the anchors merged into a trie (``_anchor_trie``): the same
    answer as a substring test per anchor (tests/store/test_redact_prefilter.py holds them together),
    about twice as fast on an entry's text, and far cheaper than a case-insensitive alternation of the
    rules (docs/decisions/0008-extraction.md, "Redaction"; docs/decisions/0066-hiredis-and-appends.md).
    """
    return bool(text) and _ANCHOR_SEARCH(text.lower()) is not None


def _aws_secret_context(text: str, match: re.Match[str]) -> bool:
    """A bare 40-char base64 string is an AWS secret only near an AWS word (else: hashes, shas)."""
    window = text[max(0, match.start() - 80) : match.start()].lower()
    return "aws" in window or "secret" in window


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    if not might_hold_secret(text):
        return text
    for name, pattern, replacement in _RULES:
        if name == "aws_secret_access_key":
            text = pattern.sub(lambda m: REDACTED if _aws_secret_context(m.string, m) else m.group(0), text)
        else:
            text = pattern.sub(replacement, text)
    return text


def redact_obj(value: Any) -> Any:
    """Redact every string inside a JSON-shaped value (dicts, lists, strings); keys are kept."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_obj(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_obj(v) for k, v in value.items()}
    return value
