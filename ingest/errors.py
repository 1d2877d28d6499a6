"""Errors raised by ``ingest``. The tree:

- IngestError: root of everything this package raises.
  - InvalidEvent: a payload is not a valid v1 turn event (carries a stable ``reason`` code).
  - PublishError: publishing to the stream failed (Redis unreachable, timeout, refused).
  - GitError: a git command a verdict source runs failed (not a repository, an unknown branch).
"""

from __future__ import annotations

from enum import StrEnum


class DeadLetterReason(StrEnum):
    """Why an event was refused; the label of ``fixmem_dead_letters_total{reason}``."""

    INVALID_UTF8 = "invalid_utf8"
    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    TOO_LARGE = "too_large"
    UNSUPPORTED_VERSION = "unsupported_version"
    INVALID_FIELDS = "invalid_fields"
    MISSING_FIELD = "missing_field"  # the stream entry has no `event` field
    TOO_MANY_DELIVERIES = "too_many_deliveries"
    PROCESSING_FAILED = "processing_failed"
    MISSING_FROM_STREAM = "missing_from_stream"  # a job's id was gone from its stream when the job ran


class IngestError(Exception):
    """Raised for any failure inside ``ingest``; the root of this package's exceptions."""


class InvalidEvent(IngestError):
    """Raised when a payload is not a valid v1 turn event; ``reason`` is a stable code."""

    def __init__(self, reason: DeadLetterReason, message: str) -> None:
        super().__init__(f"{reason.value}: {message}")
        self.reason = reason
        self.message = message


class PublishError(IngestError):
    """Raised when an event could not be published to the stream (connection, timeout, refusal)."""


class GitError(IngestError):
    """Raised when a git command of a verdict source fails (no repository, an unknown branch, no git)."""
