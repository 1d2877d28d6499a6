"""A minimal HTTP/1.1 GET for the hooks: a plain socket for ``http://``, ``urllib`` for ``https://``.

``urllib.request`` imports ``http.client``, ``email`` and ``ssl`` (~30 ms of a hook's ~125 ms of CPU,
measured with ``-X importtime``); a hook talking to a local ``fixmem serve`` needs none of them. One
request per connection (``Connection: close``); the body is read by ``Content-Length``, chunked, or to
the end. Raises ``OSError`` (timeouts and refusals included) or ``ValueError`` (a malformed answer).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

MAX_BODY_BYTES = 8 << 20


def get(url: str, headers: Mapping[str, str], timeout: float) -> tuple[int, bytes]:
    """``GET url``: the status code and the body."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return _get_tls(url, headers, timeout)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname
    lines = [f"GET {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    with socket.create_connection((host, parts.port or 80), timeout=timeout) as sock:
        sock.sendall(request)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_BODY_BYTES:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return parse_response(b"".join(chunks))


def parse_response(raw: bytes) -> tuple[int, bytes]:
    """The status code and body of a whole HTTP/1.1 response. Pure; raises ValueError."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("incomplete HTTP response")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
        raise ValueError(f"not an HTTP status line: {status_line[:80]!r}")
    found = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    if found.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    elif "content-length" in found:
        length = int(found["content-length"])
        if len(body) < length:
            raise ValueError("truncated HTTP body")
        body = body[:length]
    return int(fields[1]), body


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, sep, rest = data.partition(b"\r\n")
        if not sep:
            raise ValueError("truncated chunked body")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += rest[:size]
        data = rest[size + 2 :]


def _get_tls(url: str, headers: Mapping[str, str], timeout: float) -> tuple[int, bytes]:
    import urllib.error  # noqa: PLC0415 - only for https
    import urllib.request  # noqa: PLC0415

    request = urllib.request.Request(url, headers=dict(headers))  # noqa: S310 - https only here
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status), response.read(MAX_BODY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
