"""Localization: from a task text to the checkout files it is likely about. Pure.

``facts`` (what one source file defines and the literal strings it holds), ``index`` (a checkout's
names and literals → files, with the lookups the resolver needs) and ``resolve`` (task text → likely
files, weighted, with a reason; nothing when unsure). The caller lists and reads the checkout's files.
"""

from store.localize.facts import SourceFacts, facts
from store.localize.index import CheckoutIndex
from store.localize.resolve import Localized, LocalizeWeights, localize

__all__ = ["CheckoutIndex", "LocalizeWeights", "Localized", "SourceFacts", "facts", "localize"]
