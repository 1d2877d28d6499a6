"""The exit codes: one enum, no two names for one value, and the CLI reference's table generated from it."""

from __future__ import annotations

import re
from pathlib import Path

from fixmem.errors import EXIT_CODE_MEANINGS, ExitCode, exit_codes_markdown

CLI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"


def test_every_exit_code_has_one_name_and_a_meaning() -> None:
    values = [int(code) for code in ExitCode]
    assert len(values) == len(set(values))  # an IntEnum alias would hide a collision
    assert len(ExitCode.__members__) == len(values)
    assert set(EXIT_CODE_MEANINGS) == set(ExitCode)


def test_the_cli_reference_table_is_the_enum() -> None:
    found = re.search(r"<!-- exit-codes:[^>]*-->\n(.*?)\n<!-- /exit-codes -->", CLI_PAGE.read_text(), re.S)
    assert found is not None, "docs/reference/cli.md has no exit-codes block"
    assert found.group(1) == exit_codes_markdown()
