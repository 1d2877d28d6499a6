"""An owner's projects by name: which of them a mistyped key most likely meant. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import SequenceMatcher


def nearest_first(name: str, names: Iterable[str]) -> list[str]:
    """``names`` ordered by similarity to ``name`` (``difflib`` ratio, case-insensitive), most similar
    first; ties in name order. ``github.com/acme/widget`` puts ``github.com/acme/widgets`` first."""
    wanted = name.casefold()

    def score(candidate: str) -> float:
        return SequenceMatcher(None, wanted, candidate.casefold(), autojunk=False).ratio()

    return sorted(names, key=lambda candidate: (-score(candidate), candidate))
