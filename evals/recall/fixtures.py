"""The store's own recall tables: a small project log and what recall must answer on it.

Shared by ``tests/store/test_recall.py`` (which asserts every row) and the weight search
(``evals.recall.tune``, which skips weights under which a row would fail): the tables are an independent
check written with the store, so the search may not trade them away for figures on the eval dataset.
"""

from __future__ import annotations

from typing import Any, Final

from store.entry import FixEntry, Outcome, TestRun, entry_id

OWNER: Final = "alice"
PROJECT: Final = "/home/alice/app"
NOW: Final = 1_800_000_000.0  # the "now" every row is asked at (unix seconds)


def _entry(n: int, task: str, files: list[str], solution: str, *, errors: tuple[str, ...] = (),
           outcome: Outcome = "fixed") -> FixEntry:  # fmt: skip
    """Entry ``n`` of the log: id from ``ev-<n>``, one second after the last (the store tests' shape)."""
    event = f"ev-{n}"
    tests = None if outcome == "unverified" else TestRun(command="pytest -q", ok=outcome == "fixed")
    return FixEntry(
        id=entry_id(OWNER, PROJECT, event),
        ts=1_700_000_000.0 + n,
        project=PROJECT,
        task=task,
        files=files,
        symbols=[],
        errors=list(errors),
        tests=tests,
        outcome=outcome,
        solution=solution,
        tags=[outcome],
        event_id=event,
    )


PROJECT_LOG: Final = (
    _entry(
        1,
        "login times out for users on slow networks",
        ["src/auth/login.py"],
        "raised the auth client timeout and added a retry with backoff",
        errors=("TimeoutError: login request took # seconds",),
    ),
    _entry(
        2,
        "serializer crashes when the user has no profile",
        ["src/api/serializers.py"],
        "default to an empty profile in UserSerializer.to_representation",
        errors=("KeyError: 'profile'",),
    ),
    _entry(
        3,
        "invoice totals are off by one cent",
        ["src/billing/invoice.py"],
        "round with Decimal.quantize instead of float rounding",
        errors=("AssertionError: assert # == #",),
    ),
    _entry(
        4,
        "app fails to start without pyyaml installed",
        ["pyproject.toml"],
        "added pyyaml to the dependencies",
        errors=("ModuleNotFoundError: No module named 'yaml'",),
    ),
    _entry(
        5,
        "dark mode toggle does not persist after reload",
        ["web/src/settings/ThemeToggle.tsx"],
        "store the theme in localStorage",
        outcome="unverified",
    ),
    _entry(
        6,
        "database connection pool exhausted under load",
        ["src/db/pool.py"],
        "capped the pool size and released connections in a finally block",
        errors=("OperationalError: too many connections",),
    ),
)

# (query, recall keyword arguments, 1-based position in PROJECT_LOG of the fix that must come first)
RIGHT_FIX_FIRST: Final[tuple[tuple[str, dict[str, Any], int], ...]] = (
    ("the login is timing out", {}, 1),
    ("login timeouts on a slow network", {}, 1),
    ("users without a profile crash the serializer", {}, 2),
    ("crash", {"errors": ["KeyError: 'profile'"]}, 2),
    ("invoice total rounding is wrong", {}, 3),
    ("startup fails", {"errors": ["ModuleNotFoundError: No module named 'yaml'"]}, 4),
    ("theme is lost after a page reload", {}, 5),
    ("too many connections to the database", {}, 6),
    ("pool", {"files": ["/ws/app/src/db/pool.py"], "workspace": "/ws/app"}, 6),
    ("change the invoice", {"files": ["./src/billing/invoice.py"]}, 3),
)

# Queries nothing in PROJECT_LOG is relevant to: recall must return nothing.
NOTHING_RELEVANT: Final = (
    "write a haiku about spring",
    "deploy the service to kubernetes",
    "update the readme",
    "rename the repository",
    "add a CSV export to the reports page",
    "",
)

# An unrelated task with a file of the log: a file alone must not make it relevant.
FILE_ALONE: Final = ("write a haiku", ["src/auth/login.py"])
