"""Recall: from a project's entries to a ranked, redacted "Past fixes in this project" block. Pure.

``tokenize`` and ``lexicon`` (match forms), ``index`` (keywords, IDF-weighted overlap), ``vectors`` (hashed
meaning vectors), ``signatures`` (error signatures as recall compares them), ``view`` (everything derived
from one log snapshot), ``ranking`` (signals to a score), ``search`` (recall over a view) and ``prompt``
(the block). This package is handed entries and views; it never reads or writes the log
(``store.persist``), and an import-linter contract keeps it so.
"""
