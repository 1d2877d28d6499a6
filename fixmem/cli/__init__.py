"""The ``fixmem`` command: one entry point, one subcommand per job.

Subcommands are imported when one runs, not before: ``fixmem --help`` lists them from ``COMMANDS`` (where
each lives and its one-line help) without importing any, so every command pays only for the libraries it
uses (``bench/startup.py`` measures it; ``tests/fixmem/cli/test_startup.py`` keeps it so).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import click

from fixmem.errors import run_group

# name: (module, attribute, the command's one-line help: its docstring's first sentence, checked by a test)
COMMANDS: Final[Mapping[str, tuple[str, str, str]]] = {
    # The pipeline: run it, feed it, watch it, query it.
    "up": (
        "fixmem.cli.pipeline",
        "up_command",
        "Run the whole pipeline: Redis (embedded unless FIXMEM_REDIS_URL), the consumer and workers.",
    ),
    "down": (
        "fixmem.cli.local",
        "down_command",
        "Stop the `fixmem up` of a data directory and any Redis of it that survives.",
    ),
    "token": (
        "fixmem.cli.local",
        "token_group",
        "List, mint or revoke the API tokens `fixmem up` keeps in its data directory.",
    ),
    "ingest": (
        "fixmem.cli.pipeline",
        "ingest_command",
        "Consume the turn streams: validate, batch into RQ jobs, dead-letter the invalid.",
    ),
    "worker": (
        "fixmem.cli.pipeline",
        "worker_command",
        "Run batches from the live queue (first) and the backfill queue; SIGTERM finishes the current job.",
    ),
    "publish": (
        "fixmem.cli.stream",
        "publish_command",
        "Publish turn events from a JSONL FILE (or - for stdin), one event per line.",
    ),
    "verdict": (
        "fixmem.cli.verdict",
        "verdict_command",
        "Publish a verdict on a recorded turn: whether its fix held, by CI, a benchmark, a review, a revert.",
    ),
    "verdicts": (
        "fixmem.cli.verdicts",
        "verdicts_group",
        "Verdicts from where truth lives: git's reverts and merges (scan-git).",
    ),
    "schema": (
        "fixmem.cli.schema",
        "schema_command",
        "Print the JSON Schema of the v1 turn event (what a harness publishes).",
    ),
    "status": (
        "fixmem.cli.stream",
        "status_command",
        "Show streams (length, pending, lag), queues, failed jobs, dead letters and the fleet counters.",
    ),
    "dead-letters": (
        "fixmem.cli.stream",
        "dead_letters_group",
        "List, show, replay or purge refused events (the dead-letter stream).",
    ),
    "recall": (
        "fixmem.cli.memory",
        "recall_command",
        'Print the "Past fixes in this project" block for QUERY (nothing when nothing is relevant).',
    ),
    "stats": ("fixmem.cli.memory", "stats_command", "Counts and ratios of a project's fix log."),
    "projects": (
        "fixmem.cli.memory",
        "projects_command",
        "List the owner's projects: fixes, outcome ratios, last activity.",
    ),
    "forget": (
        "fixmem.cli.memory",
        "forget_command",
        "Delete one entry (by id) from the owner's fix logs, under the same lock the workers take.",
    ),
    "doctor": (
        "fixmem.cli.doctor",
        "doctor_command",
        "Check the owner's fix logs (lineages out of time order); --fix repairs them.",
    ),
    "notes": (
        "fixmem.cli.notes",
        "notes",
        "Hand-written project memory in <workspace>/.fixmem/memory.md, reviewed in a diff.",
    ),
    "export": (
        "fixmem.cli.notes",
        "export",
        "Export a project's fix log: a markdown digest to review in a diff, or lossless JSONL.",
    ),
    "import": (
        "fixmem.cli.notes",
        "import_",
        "Import a JSONL export (file or '-'): ids kept, entries already present skipped.",
    ),
    "eval-extraction": (
        "fixmem.cli.eval_extraction",
        "eval_extraction_command",
        "Score extraction on real agent logs: files P/R, error provenance, outcome agreement.",
    ),
    "eval": (
        "fixmem.cli.eval",
        "eval_command",
        "Measure recall quality: MRR, hit@k, abstention on negative probes, leaks, block precision.",
    ),
    "backfill": (  # replay old agent logs
        "fixmem.cli.backfill",
        "backfill_command",
        "Replay agent logs (files or directories, walked) into the fix memory, behind live traffic.",
    ),
    # Agents and dashboards: the HTTP API and /metrics, the recall_fixes tool, MCP.
    "serve": (
        "fixmem.cli.api",
        "serve_command",
        "Serve the HTTP API (recall, stats, forget per token owner) and /metrics for Prometheus.",
    ),
    "tool-schema": (
        "fixmem.cli.api",
        "tool_schema_command",
        "Print the recall_fixes tool definition as JSON.",
    ),
    "mcp": (
        "fixmem.cli.api",
        "mcp_command",
        "Serve the recall_fixes tool over MCP on stdin/stdout (add it to your agent's MCP servers).",
    ),
    # Agents' hooks: Claude Code (and the fixmem.hooks.harness adapter for Python harnesses).
    "hook": (
        "fixmem.hooks.cli",
        "hook_command",
        "Answer one agent hook: the payload on stdin, the context to add on stdout; never fails the agent.",
    ),
    "install": (
        "fixmem.hooks.cli",
        "install_command",
        "Add fixmem's hooks to Claude Code's settings (idempotent; your other hooks are kept).",
    ),
    "uninstall": (
        "fixmem.hooks.cli",
        "uninstall_command",
        "Remove fixmem's hooks (only ours) from Claude Code's settings.",
    ),
    "bench": (  # the benchmark suite of a checkout (python -m bench)
        "fixmem.cli.bench",
        "bench_command",
        "Run every benchmark (results in bench/results/); arguments go to `python -m bench` (try --help).",
    ),
}


class LazyGroup(click.Group):
    """A group whose subcommands (``lazy``: name -> module, attribute, one-line help) are imported only
    when one is resolved; its help lists them from their one-line help without importing them."""

    def __init__(self, *args: Any, lazy: Mapping[str, tuple[str, str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        module, attribute, _ = self.lazy[cmd_name]
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module}.{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The "Commands" section, as click writes it, from the one-line helps (no command imported)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy and name not in self.commands:  # a stand-in that click shortens alike
                rows.append((name, click.Command(name, help=self.lazy[name][2]).get_short_help_str(limit)))
            elif (command := self.get_command(ctx, name)) is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fixmem")
def cli() -> None:
    """Fix memory for coding agents."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting (tests call this in-process)."""
    return run_group(cli, argv)
