"""The publisher SDK's optional on-disk spool: turns Redis did not take (down past the retry budget) are
kept in files and sent when Redis answers again, instead of failing the harness.

One file per failed round trip, ``<directory>/<ns>-<pid>.jsonl``, one ``{"stream", "event"}`` object a
line, written to a temporary name and renamed (a reader never sees half a file). Draining claims a file
by renaming it (so two harness processes sharing the directory do not both send it), sends its events in
one pipelined round trip and deletes it; a file whose round trip fails is put back for the next drain.
Sending twice is harmless: the pipeline records each turn once (entry ids derive from the event's id).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

SUFFIX = ".jsonl"
CLAIMED = ".draining"

Send = Callable[[str, Sequence[bytes]], object]  # (stream, wires): one round trip; raises when not taken


class Spool:
    """Turns kept on disk under ``directory`` until Redis takes them (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def put(self, stream: str, wires: Sequence[bytes]) -> Path:
        """Keep ``wires`` (validated events) for ``stream``; returns the file. Raises OSError."""
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid()}"
        lines = b"".join(orjson.dumps({"stream": stream, "event": orjson.loads(w)}) + b"\n" for w in wires)
        temporary = self.directory / f".{name}.tmp"
        with open(temporary, "wb") as out:
            out.write(lines)
            out.flush()
            os.fsync(out.fileno())
        final = self.directory / (name + SUFFIX)
        os.replace(temporary, final)
        return final

    def pending(self) -> list[Path]:
        """The spooled files, oldest first."""
        try:
            return sorted(p for p in self.directory.iterdir() if p.name.endswith(SUFFIX) and p.name[0] != ".")
        except FileNotFoundError:
            return []

    def drain(self, send: Send) -> int:
        """Send every spooled file, oldest first, through ``send``; returns the events sent. Stops at the
        first file ``send`` raises for (it is kept, and the error propagates)."""
        sent = 0
        for path in self.pending():
            claimed = path.with_name(path.name + CLAIMED)
            try:
                os.replace(path, claimed)
            except FileNotFoundError:
                continue  # another process drains it
            rows = [orjson.loads(line) for line in claimed.read_bytes().splitlines() if line.strip()]
            by_stream: dict[str, list[bytes]] = {}
            for row in rows:
                by_stream.setdefault(str(row["stream"]), []).append(orjson.dumps(row["event"]))
            try:
                for stream, wires in by_stream.items():
                    send(stream, wires)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.replace(claimed, path)
                raise
            claimed.unlink()
            sent += len(rows)
        return sent
