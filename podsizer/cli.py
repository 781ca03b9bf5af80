"""The thin `podsizer` command line: subcommands dispatched to each role's entry function.

A role's module is imported only when its command is chosen; when it is missing the command says
`not available in this installation` (exit 1) and the others keep working. Exit status: what the
role returns; 2 for bad usage or bad settings (one message naming the variable and the flag).
Nothing imports this module.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

from podsizer.settings import run_reporting_errors

RunFn = Callable[[argparse.Namespace], int]
AddArgumentsFn = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """A subcommand: `module` provides add_arguments(parser) (or `add`) and run(args) -> int (or `entry`)."""

    name: str
    help: str
    module: str
    add: str = "add_arguments"
    entry: str = "run"


COMMANDS: tuple[Command, ...] = (
    Command(
        "recommend",
        "one run: metrics -> recommendations, printed",
        "recommender.commands",
        "add_recommend_arguments",
        "run_recommend",
    ),
    Command(
        "explain",
        "one workload's recommendation in full: reasons, bounds, cost basis, pod changes",
        "recommender.explain",
        "add_explain_arguments",
        "run_explain",
    ),
    Command(
        "run",
        "the recommender loop (interval, leader election, /metrics)",
        "recommender.commands",
        "add_run_arguments",
        "run_loop",
    ),
    Command("webhook", "the mutating admission webhook server", "webhook.cli"),
    Command("updater", "running pods to their recommendation: resize in place or evict", "updater.cli"),
    Command("console", "the read-only web console", "console.cli"),
    Command("certs", "CA and serving certificates for the webhook", "certs.cli"),
    Command("demo", "the demo: recommender and webhook on built-in data", "recommender.demo"),
)


def version() -> str:
    try:
        return metadata.version("podsizer")
    except metadata.PackageNotFoundError:
        return "unknown"


def _chosen(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _load(cmd: Command) -> tuple[AddArgumentsFn, RunFn]:
    module = importlib.import_module(cmd.module)
    add: AddArgumentsFn = getattr(module, cmd.add)
    run: RunFn = getattr(module, cmd.entry)
    return add, run


def build_parser(
    commands: Sequence[Command] = COMMANDS, chosen: str | None = None
) -> tuple[argparse.ArgumentParser, dict[str, RunFn]]:
    """The parser; only the `chosen` command's module is imported (ImportError/AttributeError when it
    cannot be, for the caller to report)."""
    parser = argparse.ArgumentParser(
        prog="podsizer", description="Right-size Kubernetes workloads, GPUs included."
    )
    parser.add_argument("--version", action="version", version=f"podsizer {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    runs: dict[str, RunFn] = {}
    for cmd in commands:
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        if cmd.name == chosen:
            add, runs[cmd.name] = _load(cmd)
            add(p)
    return parser, runs


def main(argv: Sequence[str] | None = None, commands: Sequence[Command] = COMMANDS) -> int:
    """Entry point of the `podsizer` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen(argv)
    try:
        parser, runs = build_parser(commands, chosen)
    except (ImportError, AttributeError) as exc:
        print(f"podsizer {chosen}: not available in this installation ({exc})", file=sys.stderr)
        return 1
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return run_reporting_errors(args.command, runs[args.command], args)
    except KeyboardInterrupt:
        return 130
