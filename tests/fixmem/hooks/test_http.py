"""The hooks' minimal HTTP client: response parsing (pure) and errors."""

from __future__ import annotations

import pytest

from fixmem.hooks.http import get, parse_response


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", (200, b"{}")),
        (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", (404, b"")),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            (200, b"abcde"),
        ),
        (b"HTTP/1.0 200 OK\r\n\r\nto the end", (200, b"to the end")),
    ],
)
def test_parse_response(raw: bytes, expected: tuple[int, bytes]) -> None:
    assert parse_response(raw) == expected


@pytest.mark.parametrize(
    "raw", [b"", b"garbage", b"SMTP 220 hi\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"]
)
def test_malformed_responses_raise_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError):
        parse_response(raw)


def test_only_http_urls() -> None:
    with pytest.raises(ValueError):
        get("ftp://example.org/x", {}, 1.0)
