"""The hooks' minimal HTTP client: response parsing (pure) and errors."""

from __future__ import annotations

import pytest

from fixmem.hooks.http import get, parse_response, split_url


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


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000", ("http", "127.0.0.1", 8000, "/")),
        ("http://h/api/fix-memory?x=1", ("http", "h", 80, "/api/fix-memory?x=1")),
        ("HTTPS://u:p@fixmem.example.org/base/", ("https", "fixmem.example.org", 443, "/base/")),
        ("http://[::1]:9/x", ("http", "::1", 9, "/x")),
    ],
)
def test_split_url(url: str, expected: tuple[str, str, int, str]) -> None:
    assert split_url(url) == expected


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "http://", "http://h:port/", "file:///etc/passwd"])
def test_split_url_refuses_what_is_not_an_http_url(url: str) -> None:
    with pytest.raises(ValueError):
        split_url(url)
