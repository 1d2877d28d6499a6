"""The v1 events documented: their JSON Schemas and markdown tables of their fields, from the ``TurnEvent``
and ``VerdictEvent`` models (``ingest.schema``), so the documentation cannot drift from what is validated.

The schema describes the canonical v1 shape. The model also accepts, and normalizes, a few looser forms
that the schema does not list: the legacy tool shape ``{tool, command, output, diff}``, ``input`` as a
JSON string or text, ``output`` as content blocks. Unknown fields are ignored at the top level and kept
in ``tool_events[]`` and ``harness_meta``. The whole event is at most ``FIXMEM_MAX_EVENT_BYTES``.
"""

from __future__ import annotations

from typing import Any

from ingest.schema import DEFAULT_MAX_EVENT_BYTES, WIRE_VERSION, TurnEvent, VerdictEvent

SCHEMA_ID = "turn-event.json"
VERDICT_SCHEMA_ID = "verdict-event.json"


def turn_event_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a v1 turn event."""
    schema = TurnEvent.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": f"fixmem turn event v{WIRE_VERSION}",
        "description": "A finished agent turn, published as the `event` field of an entry of fixmem:turns "
        f"stream (at most {DEFAULT_MAX_EVENT_BYTES} bytes by default: FIXMEM_MAX_EVENT_BYTES).",
    }


def verdict_event_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a v1 verdict event."""
    schema = VerdictEvent.model_json_schema(mode="validation")
    schema["anyOf"] = [{"required": ["event_id"]}, {"required": ["entry_id"]}, {"required": ["link"]}]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": VERDICT_SCHEMA_ID,
        **schema,
        "title": f"fixmem verdict event v{WIRE_VERSION}",
        "description": "A later verdict on a recorded turn (CI, a benchmark, a review, a revert, a merge), "
        "published to the same stream as the turns (`kind`: `verdict`).",
    }


def _type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in prop:
        return "object"
    if "anyOf" in prop:
        kinds = [_type(p, defs) for p in prop["anyOf"] if p.get("type") != "null"]
        return " \\| ".join(kinds) + " \\| null"
    kind = str(prop.get("type", "any"))
    if kind == "array":
        return f"array of {_type(prop.get('items', {}), defs)}"
    return {"number": "number", "integer": "integer", "boolean": "boolean", "string": "string"}.get(
        kind, kind
    )


def _rows(prefix: str, model: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    rows = []
    required = set(model.get("required", ()))
    for name, prop in model.get("properties", {}).items():
        text = str(prop.get("description", "")).replace("|", "\\|").replace("\n", " ")
        rows.append(
            f"| `{prefix}{name}` | {_type(prop, defs)} | {'yes' if name in required else ''} | {text} |"
        )
        ref = prop.get("$ref") or next((p.get("$ref") for p in prop.get("anyOf", ()) if "$ref" in p), None)
        ref = ref or prop.get("items", {}).get("$ref")
        if ref:
            child = defs[ref.rsplit("/", 1)[1]]
            suffix = "[]." if prop.get("type") == "array" else "."
            rows += _rows(f"{prefix}{name}{suffix}", child, defs)
    return rows


def turn_event_markdown() -> str:
    """The fields of a v1 turn event as a markdown table (nested fields dotted, list items with ``[]``)."""
    return _markdown(turn_event_json_schema())


def verdict_event_markdown() -> str:
    """The fields of a v1 verdict event as a markdown table."""
    return _markdown(verdict_event_json_schema())


def _markdown(schema: dict[str, Any]) -> str:
    defs = schema.get("$defs", {})
    return "\n".join(["| field | type | required | meaning |", "|---|---|---|---|", *_rows("", schema, defs)])
