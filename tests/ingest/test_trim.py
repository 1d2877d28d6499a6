"""The trim floor (pure): the oldest id a consumer group or a job still needs."""

from __future__ import annotations

import pytest

from ingest.trim import GroupPosition, trim_floor


@pytest.mark.parametrize(
    ("groups", "held", "floor"),
    [
        ([], None, None),  # no group: nothing is trimmed
        ([], 5, None),
        ([GroupPosition("g", "10-3", None)], None, "10-4"),  # all acked: after the last delivered
        ([GroupPosition("g", "10-3", "7-1")], None, "7-1"),  # its oldest pending entry
        ([GroupPosition("g", "10-3", None)], 8, "8-0"),  # a job holds an id of millisecond 8
        ([GroupPosition("g", "10-3", "7-1")], 8, "7-1"),
        ([GroupPosition("g", "10-3", None)], 10, "10-0"),  # the whole millisecond is kept
        ([GroupPosition("a", "10-3", None), GroupPosition("b", "4-0", None)], 8, "4-1"),
    ],
)
def test_the_floor_is_the_oldest_id_a_group_or_a_job_needs(
    groups: list[GroupPosition], held: int | None, floor: str | None
) -> None:
    assert trim_floor(groups, held) == floor
