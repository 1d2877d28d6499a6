"""File primitives of the store: durable append, atomic rewrite, directory fsync, the default flock.

Every ``OSError`` is translated here into ``StoreUnavailable`` naming the path (ENOSPC, EACCES, EROFS…).
Rewrites are temp file in the same directory + fsync + ``os.replace`` + directory fsync, so a crash or
a full disk at any point leaves either the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

from store.errors import unavailable


def ensure_dir(path: Path) -> None:
    """Create ``path`` (and parents) if missing; raises StoreUnavailable naming the path."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:  # a file where a directory should be
        raise unavailable(path, OSError(20, "Not a directory")) from exc
    except OSError as exc:
        raise unavailable(path, exc) from exc


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (a rename, a new file) durable; raises StoreUnavailable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_durably(path: Path, data: bytes, *, expected_size: int) -> os.stat_result:
    """Append ``data`` to ``path`` in one write and one fsync; returns the file's new stat.

    ``expected_size`` is the size the caller saw under the write lock: if the write fails halfway the file
    is cut back to it, so no torn line is left behind. Raises StoreUnavailable naming the path.
    """
    created = not path.exists()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, expected_size)
                os.fsync(fd)
            raise unavailable(path, exc) from exc
        stat = os.fstat(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)
    return stat


def temp_name(path: Path) -> Path:
    """A fresh temp file name next to ``path``: ``.<name>.<pid>.<random>.tmp`` (hidden, never a log)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


# (directory, name) -> the directory's mtime (ns) when a sweep of it for that name found it clean, and
# directory -> its mtime when a sweep found no temp file of any name in it: see remove_stale_temps.
_clean_at: dict[tuple[str, str], int] = {}
_all_clean_at: dict[str, int] = {}
_ANY_TEMP = re.compile(r"\..+\.\d+\.[0-9a-f]{8}\.tmp")


def remove_stale_temps(path: Path, *, force: bool = False) -> int:
    """Delete the temp files of ``path`` that a killed rewrite left behind; returns how many went.

    Call it only under the write lock of ``path``: then no other writer can be writing one. Each holds a
    whole copy of the file (a rotation killed before its rename), and one may hold an entry forgotten
    since. Missing or vanishing files are fine; other errors raise StoreUnavailable naming the directory.

    The directory is listed only when it changed since this process last found it clean for ``path``
    (its mtime moves whenever a file in it is created, renamed or deleted, which leaving a temp file
    behind takes): a writer appending to a project of a directory of many skips the listing, which was a
    scan of every project's files on every append. A listing that finds no temp file of any name marks the
    whole directory clean, so the other projects' files of it are not listed for until it changes (else a
    worker's first append to each of its projects listed the directory, and again after each new project).
    ``force`` lists it anyway: ``forget`` must leave no copy of the entry, even one a clock too coarse to
    move the mtime would hide.
    """
    directory = str(path.parent)
    key = (directory, path.name)
    try:
        seen = os.stat(path.parent).st_mtime_ns
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise unavailable(path.parent, exc) from exc
    if not force and seen in (_clean_at.get(key), _all_clean_at.get(directory)):
        return 0
    pattern, removed = re.compile(rf"\.{re.escape(path.name)}\.\d+\.[0-9a-f]{{8}}\.tmp"), 0
    try:
        with os.scandir(path.parent) as entries:
            temps = [e for e in entries if _ANY_TEMP.fullmatch(e.name)]
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise unavailable(path.parent, exc) from exc
    if not temps:  # the mtime was read before the listing: a temp made since then moved it
        _all_clean_at[directory] = seen
    stale = [e.path for e in temps if pattern.fullmatch(e.name)]
    for name in stale:
        try:
            os.unlink(name)
            removed += 1
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise unavailable(name, exc) from exc
    if not stale:  # the mtime read before the listing: a temp made since then moved it
        _clean_at[key] = seen
    return removed


def replace_atomically(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, ``os.replace``, directory fsync.

    With ``durable=False`` the two fsyncs are skipped (for derived files such as the index, which are
    rebuilt when found torn). On any error the temp file is removed, ``path`` is untouched, and
    StoreUnavailable naming ``path`` is raised.
    """
    tmp = temp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    try:
        try:
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise unavailable(path, exc) from exc
    if durable:
        fsync_dir(path.parent)


_DIGEST_CHARS = 64


def seal(body: bytes) -> bytes:
    """``body`` with its sha256 after it (``body \n hex \n``): a derived file that ``unseal`` checks. Pure."""
    return body + b"\n" + hashlib.sha256(body).hexdigest().encode() + b"\n"


def unseal(data: bytes) -> bytes | None:
    """The body ``seal`` wrapped; None when the digest does not match (torn, interleaved, unsealed). Pure."""
    if len(data) < _DIGEST_CHARS + 2 or data[-_DIGEST_CHARS - 2 :: _DIGEST_CHARS + 1] != b"\n\n":
        return None
    body, digest = data[: -_DIGEST_CHARS - 2], data[-_DIGEST_CHARS - 1 : -1]
    return body if hashlib.sha256(body).hexdigest().encode() == digest else None


def overwrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite ``path`` with ``data`` in place: ``pwrite`` at 0, then cut to length, no fsync.

    For derived files checked by a digest (``overwrite_sealed``, ``overwrite_with_seal``). Not temp file
    + rename: a rename over an existing file makes ext4 flush the new file's data first (``auto_da_alloc``:
    ``bench/summary_ab.py``'s notes), where a write in place costs no flush. The cut is made only when
    the file was longer than ``data`` (an ``fstat``, not a ``ftruncate`` that journals a metadata change
    each time: these files mostly grow); a writer racing this one can leave bytes past the end, which
    the digest refuses, as it refuses any interleaving. Raises StoreUnavailable naming the path.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    try:
        longer = os.fstat(fd).st_size > len(data)
        written = os.pwrite(fd, data, 0)
        if written != len(data):
            raise OSError(0, f"short write: {written} of {len(data)} bytes")
        if longer:
            os.ftruncate(fd, len(data))
    except OSError as exc:
        raise unavailable(path, exc) from exc
    finally:
        os.close(fd)


def overwrite_sealed(path: Path, body: bytes) -> None:
    """Overwrite a derived file in place with ``seal(body)`` (``overwrite_in_place``).

    A reader racing the write, or a crash in it, finds the digest wrong (``unseal``) and rebuilds the file
    from the log. Raises StoreUnavailable naming the path.
    """
    overwrite_in_place(path, seal(body))


def seal_path(path: Path) -> Path:
    """The sibling file that holds the digest of ``path`` (``overwrite_with_seal``): ``<name>.sha256``."""
    return path.with_name(path.name + ".sha256")


def seal_line(path: Path, body: bytes) -> bytes:
    """The seal file's content for ``body`` written at ``path``: ``sha256sum``'s line (``<hex>  <name>``),
    so ``sha256sum -c`` checks the pair by hand. Pure."""
    return hashlib.sha256(body).hexdigest().encode() + b"  " + path.name.encode() + b"\n"


def overwrite_with_seal(path: Path, body: bytes) -> None:
    """Overwrite a derived file in place with ``body`` as it is, then its seal file (``seal_path``).

    Both in place, no fsync (``overwrite_in_place``). A reader racing the two writes, a crash between
    them, or a writer of another version that left one of the two finds the digest wrong
    (``read_with_seal``) and rebuilds the file from the log. Raises StoreUnavailable naming the path.
    """
    overwrite_in_place(path, body)
    overwrite_in_place(seal_path(path), seal_line(path, body))


def read_with_seal(path: Path) -> bytes | None:
    """The body of a file ``overwrite_with_seal`` wrote; None when either file is missing or unreadable,
    or the body's sha256 is not the one its seal file names (torn, interleaved, an older format)."""
    try:
        body = path.read_bytes()
        digest = seal_path(path).read_bytes()[:_DIGEST_CHARS]
    except OSError:
        return None
    return body if hashlib.sha256(body).hexdigest().encode() == digest else None


def read_sealed(path: Path) -> bytes | None:
    """The body of a file ``overwrite_sealed`` wrote; None when missing, unreadable, torn or not sealed."""
    try:
        return unseal(path.read_bytes())
    except OSError:
        return None


def truncate_durably(path: Path, size: int) -> None:
    """Cut ``path`` to ``size`` bytes and fsync it; raises StoreUnavailable naming the path."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    finally:
        os.close(fd)


@contextlib.contextmanager
def flock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with`` block.

    flock is per open file description, so it excludes other threads of this process too. It is not
    trustworthy on network filesystems: pass a distributed lock to ``FixStore`` there.
    Raises StoreUnavailable naming the path.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise unavailable(path, exc) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise unavailable(path, exc) from exc
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock
