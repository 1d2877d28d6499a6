"""``fixmem hook claude-code --check`` (and ``fixmem doctor``): what the installed hook would do right now.

Read from the same places the hook reads: the Claude Code settings files that hold fixmem's hook (the
project's ``settings.local.json`` and ``settings.json``, the user's ``settings.json``), the ``FIXMEM_*``
values pinned in its command at install time over this environment (what Claude Code passes on), hence
the owner, the project key of the checkout, where recall reads (the API, or the data directory's store),
whether that answers (an authenticated recall over HTTP, or the store's log of the project), the state of
the checkout's index that task-start recall localizes in (``fixmem.runtime.localize.state``), where a
Stop publishes, turns waiting in the spool, the failure counts and the hook's last calls
(``<data_dir>/hooks/calls.jsonl``). Not on the hooks' fast path.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fixmem.hooks import install as setup
from fixmem.hooks.claude_code import project_of, spool_dir
from fixmem.hooks.config import PREFIX, HookConfig
from fixmem.hooks.reader import Query, ReaderError, RemoteReader
from fixmem.hooks.session import read_counters, recent_calls


@dataclass
class HookReport:
    """What ``check`` found: lines to print (``label``, ``text``) and the problems among them."""

    lines: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def say(self, label: str, text: str, *, problem: bool = False) -> None:
        self.lines.append((label, text))
        if problem:
            self.problems.append(f"{label}: {text}")

    def render(self) -> str:
        return "".join(f"{label:<10} {text}\n" for label, text in self.lines)


def pinned_in(command: str) -> dict[str, str]:
    """The ``FIXMEM_*=value`` assignments before an installed hook command (pure)."""
    found: dict[str, str] = {}
    try:
        words = shlex.split(command)
    except ValueError:
        return found
    for word in words:
        name, eq, value = word.partition("=")
        if not eq or not name.isidentifier():
            break
        if name.startswith(PREFIX):
            found[name] = value
    return found


def installed_commands(project_dir: Path, home: Path) -> list[tuple[Path, str]]:
    """(settings file, our hook command) for every file that holds fixmem's hook, project files first."""
    out = []
    for path in [
        *setup.settings_paths("project", project_dir, home),
        *setup.settings_paths("user", project_dir, home),
    ]:
        try:
            settings = setup.load(path)
        except setup.InstallError:
            continue
        hooks = settings.get("hooks")
        groups = (
            [g for v in hooks.values() if isinstance(v, list) for g in v] if isinstance(hooks, dict) else []
        )
        commands = [
            h["command"]
            for g in groups
            if isinstance(g, dict)
            for h in g.get("hooks") or []
            if setup.is_ours(h)
        ]
        if commands:
            out.append((path, commands[0]))
    return list(dict.fromkeys(out))


def check(project_dir: Path, env: Mapping[str, str], home: Path) -> HookReport:
    """What the Claude Code hook installed for ``project_dir`` would do now, with ``env`` as the rest of
    its environment."""
    report = HookReport()
    found = installed_commands(project_dir, home)
    if not found:
        report.say("installed", f"no fixmem hook in {project_dir}/.claude or {home}/.claude: run "
                   "`fixmem install claude-code`", problem=True)  # fmt: skip
    for path, _command in found:
        report.say("installed", str(path))
    if len(found) > 1:
        report.say(
            "twice", "installed in more than one file: Claude Code runs it once per file", problem=True
        )
    pinned = pinned_in(found[0][1]) if found else {}
    config = HookConfig.from_env({**env, **pinned})
    report.say(
        "pinned", ", ".join(f"{k}={v}" for k, v in sorted(pinned.items())) or "nothing (from the environment)"
    )
    report.say("owner", config.owner or "(none: set FIXMEM_OWNER)", problem=not config.owner)
    project = project_of(config, str(project_dir))
    report.say("project", project)
    if not config.enabled:
        report.say("recall", "off (FIXMEM_FIX_MEMORY_ENABLED / FIXMEM_FIX_MEMORY_AUTO_RECALL)", problem=True)
    _reach(report, config, project)
    _localizing(report, config, project_dir)
    _publishing(report, config)
    counts = read_counters(config.hooks_dir)
    report.say("failures", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none counted")
    calls = recent_calls(config.hooks_dir)
    report.say(
        "calls", f"last {len(calls)} in {config.hooks_dir}/calls.jsonl" if calls else "none recorded yet"
    )
    for call in calls:
        report.lines.append(("", describe_call(call)))
    return report


def describe_call(call: Mapping[str, object]) -> str:
    """One line of the call log as text: time, event, project, what it did, how long it took (pure)."""
    ts = call.get("ts")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) if isinstance(ts, int | float) else "?"
    injected = call.get("injected")
    did = f"injected {len(injected)} fix(es)" if isinstance(injected, list) and injected else ""
    did = did or str(call.get("result") or "answered nothing")
    return f"{when}Z {call.get('event') or '?'} {call.get('project') or ''}: {did} ({call.get('ms', '?')} ms)"


def _reach(report: HookReport, config: HookConfig, project: str) -> None:
    if config.api_url and not config.api_token:
        report.say(
            "reads", f"{config.api_url}, but no token (FIXMEM_API_TOKEN_FILE unreadable?)", problem=True
        )
        return
    if config.remote and config.api_url and config.api_token:
        report.say("reads", f"the API at {config.api_url}")
        reader = RemoteReader(config.api_url, config.api_token, timeout=max(config.timeout_seconds, 2.0), k=1)
        try:
            reader.candidates(project, Query("fixmem doctor"))
        except ReaderError as exc:
            report.say("reachable", f"no: {exc}", problem=True)
            return
        report.say("reachable", "yes: an authenticated recall answered")
        return
    report.say("reads", f"the store in {config.data_dir} (local mode, through the recall daemon)")
    from fixmem.hooks.stores import local_store  # noqa: PLC0415 - the store: numpy, pydantic

    try:
        store = local_store(config)
        entries = (
            len(store.read(config.owner, project).entries) if store.has_project(config.owner, project) else 0
        )
    except Exception as exc:  # any store failure is what the hook would meet
        report.say("reachable", f"no: {type(exc).__name__}: {exc}", problem=True)
        return
    report.say("reachable", f"yes: {entries} fixes of {config.owner} for {project}")


def _localizing(report: HookReport, config: HookConfig, project_dir: Path) -> None:
    from fixmem.runtime.localize.state import index_state  # noqa: PLC0415 - git, the index

    state = index_state(config.localize_dir, str(project_dir), enabled=config.localize, now=time.time())
    report.say("localize", state.text, problem=state.problem)


def _publishing(report: HookReport, config: HookConfig) -> None:
    if config.redis_url:
        from ingest.connection import REDIS_DOWN, connect  # noqa: PLC0415

        try:
            connect(config.redis_url, timeout=2.0).ping()
            report.say("stop", f"publishes finished turns to {config.redis_url} ({config.stream})")
        except (*REDIS_DOWN, ValueError) as exc:
            report.say("stop", f"{config.redis_url} does not answer ({exc}): turns are spooled", problem=True)
    else:
        report.say("stop", f"records finished turns in {config.data_dir} itself (no FIXMEM_REDIS_URL)")
    try:
        waiting = [n for n in os.listdir(spool_dir(config)) if n.endswith(".jsonl") and not n.startswith(".")]
    except OSError:
        waiting = []
    if waiting:
        report.say(
            "spool", f"{len(waiting)} file(s) of turns wait in {spool_dir(config)}: sent when Redis answers"
        )
