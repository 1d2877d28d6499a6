"""A minimal HTTP/1.1 client for the hooks: a plain socket for ``http://``, ``urllib`` for ``https://``.

``urllib.request`` imports ``http.client``, ``email`` and ``ssl``, and even ``urllib.parse`` costs ~5 ms
of CPU on the bench machine; a hook talking to a local ``fixmem serve`` needs none of them. One request
per connection (``Connection: close``); the body is read by ``Content-Length``, chunked, or to the end.
Raises ``OSError`` (timeouts and refusals included) or ``ValueError`` (a malformed URL or answer).
"""

from __future__ import annotations

import socket

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from collections.abc import Mapping

MAX_BODY_BYTES = 8 << 20


def split_url(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, target)`` of an ``http(s)://host[:port]/path?query`` URL. Pure; raises
    ValueError."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in {"http", "https"}:
        raise ValueError(f"not an http(s) URL: {url!r}")
    netloc, slash, path = rest.partition("/")
    netloc = netloc.rpartition("@")[2]  # credentials in the URL are not sent
    target = slash + path if slash else "/"
    if netloc.startswith("["):  # [::1]:8000
        host, _, port_text = netloc[1:].partition("]")
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = netloc.partition(":")
    if not host or (port_text and not port_text.isdigit()):
        raise ValueError(f"not an http(s) URL: {url!r}")
    return scheme, host, int(port_text) if port_text else (443 if scheme == "https" else 80), target


def request(
    method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
) -> tuple[int, bytes]:
    """``method url`` with ``body``: the status code and the body of the answer."""
    scheme, host, port, target = split_url(url)
    if scheme == "https":
        return _request_tls(method, url, headers, body, timeout)
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(data)
        return parse_response(recv_all(sock, MAX_BODY_BYTES))


def recv_all(sock: socket.socket, max_bytes: int) -> bytes:
    """What ``sock`` sends until it closes (or a little past ``max_bytes``). Raises OSError."""
    chunks: list[bytes] = []
    size = 0
    while size <= max_bytes:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def get(url: str, headers: Mapping[str, str], timeout: float) -> tuple[int, bytes]:
    """``GET url``: the status code and the body."""
    return request("GET", url, headers, None, timeout)


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


def _request_tls(
    method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
) -> tuple[int, bytes]:
    import urllib.error  # noqa: PLC0415 - only for https
    import urllib.request  # noqa: PLC0415

    sent = urllib.request.Request(url, data=body, headers=dict(headers), method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(sent, timeout=timeout) as response:  # noqa: S310 - https only here
            return int(response.status), response.read(MAX_BODY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
