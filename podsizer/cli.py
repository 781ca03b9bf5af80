"""The thin `podsizer` command line: subcommands dispatched to each role's entry function.

A role's module is imported only when its command is chosen; when it is missing the command says
`not available in this installation` (exit 1) and the others keep working. Exit status: what the
role returns; 2 for bad usage or bad settings (one message naming the variable and the flag).
Nothing imports this module.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import NoReturn

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


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line and a pointer to --help, not the whole usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")


def unknown_options(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """What `extras` (what no option took) are, with the closest option of `parser` where one is close."""
    known = sorted(o for action in parser._actions for o in action.option_strings if o.startswith("--"))
    parts = []
    value_of_unknown = False
    for extra in extras:
        if not extra.startswith("-"):
            if not value_of_unknown:  # a value after an unknown option is that option's, not news
                parts.append(f"unexpected argument {extra!r}")
            value_of_unknown = False
            continue
        flag = extra.split("=", 1)[0]
        value_of_unknown = "=" not in extra
        close = difflib.get_close_matches(flag, known, n=1, cutoff=0.7)
        parts.append(f"unknown option {flag}" + (f" (did you mean {close[0]}?)" if close else ""))
    return "; ".join(parts)


def unknown_command(name: str, commands: Sequence[Command]) -> str:
    close = difflib.get_close_matches(name, [c.name for c in commands], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"podsizer: error: unknown command {name!r}{hint}; commands: {', '.join(c.name for c in commands)}"


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
    parser = _Parser(prog="podsizer", description="Right-size Kubernetes workloads, GPUs included.")
    parser.add_argument("--version", action="version", version=f"podsizer {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    runs: dict[str, RunFn] = {}
    for cmd in commands:
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        if cmd.name == chosen:
            add, runs[cmd.name] = _load(cmd)
            add(p)
    return parser, runs


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    chosen: argparse.ArgumentParser = sub.choices[name]
    return chosen


def main(argv: Sequence[str] | None = None, commands: Sequence[Command] = COMMANDS) -> int:
    """Entry point of the `podsizer` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # answered before any role's settings are imported
        print(f"podsizer {version()}")
        return 0
    chosen = _chosen(argv)
    if chosen is not None and chosen not in {c.name for c in commands}:
        print(unknown_command(chosen, commands), file=sys.stderr)
        return 2
    try:
        parser, runs = build_parser(commands, chosen)
    except (ImportError, AttributeError) as exc:
        print(f"podsizer {chosen}: not available in this installation ({exc})", file=sys.stderr)
        return 1
    try:
        args, extras = parser.parse_known_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if extras:
        prog = f"podsizer {args.command}"
        print(f"{prog}: error: {unknown_options(_subparser(parser, args.command), extras)}", file=sys.stderr)
        print(f"(see `{prog} --help`)", file=sys.stderr)
        return 2
    from podsizer.settings import run_reporting_errors  # pydantic: only once a command runs

    try:
        return run_reporting_errors(args.command, runs[args.command], args)
    except KeyboardInterrupt:
        return 130
