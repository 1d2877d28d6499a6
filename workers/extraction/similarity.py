"""``difflib.SequenceMatcher(None, a, b, autojunk=False)``'s three ratios of two strings, as typed code. Pure.

The change summary pairs a removed line with an added one by difflib's ratio (``changes.describe``); the
stdlib's ``SequenceMatcher`` is interpreted Python, where this module is compiled with the rest of the
extraction core (mypyc, ``setup.py``). The numbers are difflib's own: the same counts (matching
characters, the sizes of the matching blocks difflib's ``get_matching_blocks`` finds, with its ties
broken the same way) over the same formula (``2.0 * matches / (len(a) + len(b))``, 1.0 for two empty
strings). With no junk function and ``autojunk=False`` no character is junk, so difflib's junk branches
do nothing and are left out. ``tests/workers/extraction/test_similarity.py`` holds them to difflib.
"""

from __future__ import annotations


def _ratio(matches: int, length: int) -> float:
    return 2.0 * matches / length if length else 1.0


def real_quick_ratio(a: str, b: str) -> float:
    """An upper bound of ``ratio`` from the lengths alone (``SequenceMatcher.real_quick_ratio``)."""
    return _ratio(min(len(a), len(b)), len(a) + len(b))


def quick_ratio(a: str, b: str) -> float:
    """An upper bound of ``ratio`` from the characters in common, in any order (``quick_ratio``)."""
    in_b: dict[str, int] = {}
    for char in b:
        in_b[char] = in_b.get(char, 0) + 1
    left: dict[str, int] = {}
    matches = 0
    for char in a:
        available = left[char] if char in left else in_b.get(char, 0)
        left[char] = available - 1
        if available > 0:
            matches += 1
    return _ratio(matches, len(a) + len(b))


def _longest_match(
    a: str, b: str, where: dict[str, list[int]], window: tuple[int, int, int, int]
) -> tuple[int, int, int]:
    """``SequenceMatcher.find_longest_match``: the longest block ``a[i:i+k] == b[j:j+k]`` in the window
    ``(alo, ahi, blo, bhi)``, the earliest ``i`` (then ``j``) among the longest."""
    alo, ahi, blo, bhi = window
    best_i, best_j, best_size = alo, blo, 0
    run: dict[int, int] = {}
    nothing: list[int] = []
    for i in range(alo, ahi):
        grown: dict[int, int] = {}
        for j in where.get(a[i], nothing):
            if j < blo:
                continue
            if j >= bhi:
                break
            k = run.get(j - 1, 0) + 1
            grown[j] = k
            if k > best_size:
                best_i, best_j, best_size = i - k + 1, j - k + 1, k
        run = grown
    while best_i > alo and best_j > blo and a[best_i - 1] == b[best_j - 1]:
        best_i, best_j, best_size = best_i - 1, best_j - 1, best_size + 1
    while (
        best_i + best_size < ahi
        and best_j + best_size < bhi
        and a[best_i + best_size] == b[best_j + best_size]
    ):
        best_size += 1
    return best_i, best_j, best_size


def ratio(a: str, b: str) -> float:
    """``SequenceMatcher.ratio``: twice the characters of the matching blocks over the total length."""
    where: dict[str, list[int]] = {}
    for j, char in enumerate(b):
        where.setdefault(char, []).append(j)
    matches = 0
    queue = [(0, len(a), 0, len(b))]
    while queue:
        alo, ahi, blo, bhi = window = queue.pop()
        i, j, k = _longest_match(a, b, where, window)
        if k:
            matches += k
            if alo < i and blo < j:
                queue.append((alo, i, blo, j))
            if i + k < ahi and j + k < bhi:
                queue.append((i + k, ahi, j + k, bhi))
    return _ratio(matches, len(a) + len(b))
