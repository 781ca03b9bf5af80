"""`podsizer certs generate`: write a CA and serving certificate and print the caBundle."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from certs.generate import generate_bundle, load_ca, write_bundle


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `certs` sub-commands (today: generate) to a parser."""
    sub = parser.add_subparsers(dest="certs_command", required=True)
    gen = sub.add_parser("generate", help="create a CA and a serving certificate for the webhook Service")
    gen.add_argument("--service", required=True, help="Service name of the webhook")
    gen.add_argument("--namespace", required=True, help="namespace of the Service")
    gen.add_argument("--out", type=Path, default=Path("."), help="directory for ca.crt, tls.crt, tls.key")
    gen.add_argument("--dns", action="append", default=[], help="extra DNS name (repeatable)")
    gen.add_argument("--ip", action="append", default=[], help="extra IP address SAN (repeatable)")
    gen.add_argument("--days", type=int, default=365, help="serving certificate lifetime in days")
    gen.add_argument("--ca-cert", type=Path, help="sign with this existing CA (renewal keeps the caBundle)")
    gen.add_argument("--ca-key", type=Path, help="the existing CA's private key (with --ca-cert)")
    gen.add_argument(
        "--write-ca-key", action="store_true", help="also write ca.key (0600) for later renewals"
    )


def run(args: argparse.Namespace) -> int:
    """Run the parsed `certs` command; returns the exit status."""
    if args.certs_command != "generate":
        print(f"podsizer certs: unknown command {args.certs_command!r}", file=sys.stderr)
        return 2
    if args.days < 1:
        print("podsizer certs generate: --days must be at least 1", file=sys.stderr)
        return 2
    if (args.ca_cert is None) != (args.ca_key is None):
        print("podsizer certs generate: --ca-cert and --ca-key go together", file=sys.stderr)
        return 2
    try:
        ca = load_ca(args.ca_cert, args.ca_key) if args.ca_cert is not None else None
        bundle = generate_bundle(args.service, args.namespace, args.dns, args.ip, args.days, ca=ca)
    except (ValueError, OSError) as exc:
        print(f"podsizer certs generate: {exc}", file=sys.stderr)
        return 2
    paths = write_bundle(bundle, args.out, write_ca_key=args.write_ca_key)
    for name, path in paths.items():
        print(f"wrote {name}: {path}", file=sys.stderr)
    print(bundle.ca_bundle)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point: `python -m certs generate ...`."""
    parser = argparse.ArgumentParser(prog="podsizer certs")
    add_arguments(parser)
    return run(parser.parse_args(argv))
