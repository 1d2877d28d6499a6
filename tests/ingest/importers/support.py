"""Helpers for the importer tests: the fixture folder and a one-call loader."""

from __future__ import annotations

from pathlib import Path

from ingest.importers import ImportedFile, import_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agent-logs"


def load(relative: str, **kwargs: object) -> ImportedFile:
    """Import one fixture file (owner ``tester``) and insist it was read without error."""
    result = import_file(FIXTURES / relative, owner="tester", **kwargs)  # type: ignore[arg-type]
    assert result.error is None, result.error
    return result
