"""The bounds and defaults of a recall request, in one place: every surface (``fixmem.service``).

A task text arrives whole (an issue or PR description: 40 to 600 words, sometimes a log): the API's POST,
the tool and the CLI take up to ``MAX_QUERY_CHARS`` (the tool and the CLI trim a longer one with
``store.fit_query``, keeping its head and its code and traceback lines; the API answers 422). A GET's URL
carries at most ``MAX_GET_QUERY_CHARS``.
"""

from __future__ import annotations

from typing import Final

MAX_QUERY_CHARS: Final = 16_384
MAX_GET_QUERY_CHARS: Final = 4000
MAX_ERROR_CHARS: Final = 4000
MAX_FILES: Final = 50
MAX_PATH_CHARS: Final = 1024
MAX_REASON_CHARS: Final = 300  # why a client localized the task to a file (``reasons``)
DEFAULT_K: Final = 5  # fixes recalled when the caller names no k (the hooks mirror it: hooks/config.py)
MAX_K: Final = 50
# Settings.fix_memory_prompt_budget_tokens defaults to this (the hooks mirror it: hooks/config.py)
DEFAULT_PROMPT_BUDGET_TOKENS: Final = 600
