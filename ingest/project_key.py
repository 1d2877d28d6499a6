"""The project key of a workspace — one rule for the SDK, the importers, the MCP server, the CLI and hooks.

``project_key_for(workspace)``: the checkout's ``origin`` remote as ``host/owner/repo`` when the workspace
lies in a git checkout that has one, else the workspace's absolute path. So an agent working in
``/home/alice/widgets`` (origin ``git@github.com:acme/widgets.git``) and a CI clone of the same repository
at ``/builds/7/widgets`` (origin ``https://ci:TOKEN@github.com/acme/widgets``) share one key,
``github.com/acme/widgets``.

Rules this file obeys:

- ``remote_key(url)`` is pure (a string in, a key or None out) and holds every normalisation: ssh
  ``git@host:owner/repo.git``, ``ssh://``, ``git://``, ``http(s)://`` with credentials stripped, ports
  dropped (an ssh remote on port 2222 and the https remote of the same repository agree), the host
  lower-cased, a trailing ``.git`` and slashes removed; the path keeps its case. Local remotes (a path,
  ``file://``) are not keys: the workspace's path is.
- ``project_key_for`` reads files only: it walks up from the workspace to the nearest ``.git`` (a
  directory, or a ``gitdir:`` file as in worktrees and submodules; a worktree's ``commondir`` leads to the
  shared config) and reads ``[remote "origin"] url`` from that config. No ``git`` process, no clock, no
  Redis: hooks call it on every turn. ``url.<base>.insteadOf`` rewrites and config includes are not
  followed. The nearest ``.git`` decides even without an ``origin`` (the path is the key then).
- The absolute path is ``os.path.abspath`` (symlinks not resolved), as the keys written before this rule.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["project_key_for", "remote_key", "remote_key_for", "remote_of_config"]

_SCHEME = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*)://(?P<rest>.*)$")
_SCP = re.compile(r"^(?:(?P<user>[^@/\s]+)@)?(?P<host>[^:/\s]+):(?P<path>.*)$")
_NETWORK_SCHEMES = frozenset({"ssh", "git", "http", "https", "git+ssh", "ssh+git", "ftp", "ftps"})
_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_MAX_CONFIG_BYTES = 1 << 20


def remote_key(url: str) -> str | None:
    """``host/owner/repo`` for a network git remote URL; None for a local or unparsable one."""
    text = url.strip()
    scheme = _SCHEME.match(text)
    if scheme:
        if scheme["scheme"].lower() not in _NETWORK_SCHEMES:
            return None  # file:// and unknown transports name no shared repository
        authority, _, path = scheme["rest"].partition("/")
        host = authority.rpartition("@")[2]  # user:token@ stripped
        host = host[: host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]  # port dropped
    else:
        scp = _SCP.match(text)
        if scp is None or len(scp["host"]) == 1:  # C:\repo is a Windows path, not host:path
            return None
        host, path = scp["host"], scp["path"]
    host = host.strip().lower().rstrip(".")
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    if parts and parts[-1].lower().endswith(".git"):
        parts[-1] = parts[-1][:-4]
    parts = [p for p in parts if p]
    if not host or not parts or ".." in parts:
        return None
    return "/".join([host, *parts])


def remote_of_config(text: str, remote: str = "origin") -> str | None:
    """The ``url`` of ``[remote "<remote>"]`` in a git config file's text (the last one wins), else None."""
    current = False
    url: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        section = _SECTION.match(line)
        if section:
            name, sub = section[1].lower(), section[2]
            if sub is None and "." in name:  # the old [remote.origin] form (its subsection is lower-cased)
                name, _, sub = name.partition(".")
            current = name == "remote" and sub is not None and sub.replace('\\"', '"') == remote
            line = line[section.end() :].strip()  # a key may follow on the same line
            if not line:
                continue
        if not current:
            continue
        key, eq, value = line.partition("=")
        if eq and key.strip().lower() == "url":
            url = _config_value(value)
    return url


def _config_value(value: str) -> str:
    """A config value: quotes removed, an unquoted ``#``/``;`` comment cut, escapes of quotes undone."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[i + 1], value[i + 1]))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def project_key_for(workspace: str | os.PathLike[str]) -> str:
    """The project key of ``workspace``: its checkout's origin remote (``remote_key``), else its absolute
    path (POSIX form). Reads at most a few small files; never raises for an unreadable checkout."""
    absolute = os.path.abspath(os.fspath(workspace))
    return remote_key_for(absolute) or Path(absolute).as_posix()


def remote_key_for(workspace: str | os.PathLike[str]) -> str | None:
    """``remote_key`` of the origin of the checkout ``workspace`` lies in; None outside one, without an
    origin, or with a local one."""
    config = _config_path(os.path.abspath(os.fspath(workspace)))
    if config is None:
        return None
    try:
        with open(config, "rb") as handle:
            text = handle.read(_MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    url = remote_of_config(text)
    return remote_key(url) if url else None


def _config_path(start: str) -> str | None:
    """The config file of the nearest git checkout at or above ``start``, or None outside any."""
    directory = start
    while True:
        dot_git = os.path.join(directory, ".git")
        if os.path.isdir(dot_git):
            return _common_config(dot_git)
        if os.path.isfile(dot_git):
            gitdir = _gitdir_of_file(dot_git, directory)
            return _common_config(gitdir) if gitdir else None
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _gitdir_of_file(dot_git: str, directory: str) -> str | None:
    """The directory a ``.git`` file points at (``gitdir: <path>``, relative to the checkout)."""
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as handle:
            first = handle.readline(4096).strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(directory, target)) if target else None


def _common_config(gitdir: str) -> str:
    """``<gitdir>/config``, or the shared one a worktree's ``commondir`` file names."""
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as handle:
            common = handle.readline(4096).strip()
    except OSError:
        common = ""
    return os.path.join(os.path.normpath(os.path.join(gitdir, common)) if common else gitdir, "config")
