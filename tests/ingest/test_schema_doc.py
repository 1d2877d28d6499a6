"""The v1 turn event's documentation: the JSON Schema (docs file, ``fixmem schema``, the API route) and
the tables of docs/reference/event-schema.md come from the model, and the schema accepts what the
pipeline publishes and every ``XADD`` example the README and docs/ show."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from fixmem.cli import main
from fixmem.runtime.demo import demo_turns
from ingest.schema_doc import (
    turn_event_json_schema,
    turn_event_markdown,
    verdict_event_json_schema,
    verdict_event_markdown,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PAGE = ROOT / "docs" / "reference" / "event-schema.md"


def shown_docs() -> str:
    """The README and every page under docs/, where ``XADD`` examples are shown."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n".join(page.read_text() for page in pages)


def test_the_docs_file_and_the_reference_table_are_the_models() -> None:
    """Failed on the old code: neither existed (the fields were documented only in ingest/schema.py)."""
    on_disk = json.loads((ROOT / "docs" / "turn-event.schema.json").read_text())
    assert on_disk == turn_event_json_schema(), (
        "regenerate docs/turn-event.schema.json (see ingest.schema_doc)"
    )
    page = SCHEMA_PAGE.read_text()
    table = re.search(r"<!-- turn-event: [^>]*-->\n(.*?)\n<!-- /turn-event -->", page, re.S)
    assert table is not None and table.group(1) == turn_event_markdown()


def test_fixmem_schema_prints_it_and_it_validates_real_events(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == turn_event_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"XADD fixmem:turns '\*' event '\{", readme), "the README's XADD example moved"
    examples = [json.loads(m) for m in re.findall(r"XADD fixmem:turns '\*' event '(\{.*?\})'", shown_docs())]
    for event in [*examples, *demo_turns(1_767_225_600.0)]:
        validator.validate(event)
    for broken in (
        {"v": 1, "ts": 1.0, "project_key": "p"},
        {"v": 2, "ts": 1.0, "owner": "a", "project_key": "p"},
    ):
        assert not validator.is_valid(broken)


def test_the_verdict_event_docs_are_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    on_disk = json.loads((ROOT / "docs" / "verdict-event.schema.json").read_text())
    assert on_disk == verdict_event_json_schema(), "regenerate docs/verdict-event.schema.json"
    page = SCHEMA_PAGE.read_text()
    table = re.search(r"<!-- verdict-event: [^>]*-->\n(.*?)\n<!-- /verdict-event -->", page, re.S)
    assert table is not None and table.group(1) == verdict_event_markdown()
    assert main(["schema", "--kind", "verdict"]) == 0
    schema = json.loads(capsys.readouterr().out)
    validator = jsonschema.Draft202012Validator(schema)
    good = {"v": 1, "kind": "verdict", "entry_id": "fix-0123456789abcdef", "ts": 2.0, "owner": "a",
            "project_key": "p", "outcome": "partial", "source": "revert"}  # fmt: skip
    validator.validate(good)
    examples = [
        json.loads(m)
        for m in re.findall(r"XADD fixmem:turns '\*' event '(\{\"v\": 1, \"kind\".*?\})'", shown_docs())
    ]
    assert examples, "the verdict XADD example (docs/integrations.md) moved"
    for event in examples:
        validator.validate(event)
    no_turn = {k: v for k, v in good.items() if k != "entry_id"}
    assert not validator.is_valid(no_turn)
