"""`podsizer certs generate` (a CA and serving certificate, caBundle printed) and `podsizer certs renew`."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from certs.generate import generate_bundle, load_ca, write_bundle
from certs.renew import DEFAULT_WEBHOOK_NAME, CertApi, RenewConfig, RenewError, renew


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `certs` sub-commands (generate, renew) to a parser."""
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
    _add_renew(
        sub.add_parser("renew", help="renew the chart's generated certificate in its Secret before expiry")
    )


def _add_renew(ren: argparse.ArgumentParser) -> None:
    ren.add_argument(
        "--namespace", default=os.environ.get("POD_NAMESPACE", ""), help="namespace of the Secrets"
    )
    ren.add_argument("--service", required=True, help="Service name of the webhook (the certificate's names)")
    ren.add_argument("--secret", required=True, help="the webhook's kubernetes.io/tls Secret")
    ren.add_argument("--ca-secret", required=True, help="the Secret holding ca.crt and ca.key")
    ren.add_argument("--webhook-configuration", required=True, help="MutatingWebhookConfiguration to update")
    ren.add_argument("--webhook-name", action="append", default=[], help="webhook in it (repeatable)")
    ren.add_argument("--renew-before-days", type=int, default=60, help="renew when it expires within this")
    ren.add_argument("--days", type=int, default=365, help="lifetime of the new serving certificate")
    ren.add_argument("--ca-days", type=int, default=3650, help="lifetime of a new CA, when one is needed")
    ren.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster configuration)")


def renew_config(args: argparse.Namespace) -> RenewConfig:
    """The RenewConfig of parsed `certs renew` arguments; ValueError naming the bad one."""
    if not args.namespace:
        raise ValueError("--namespace (or POD_NAMESPACE) is required")
    if args.days < 1 or args.ca_days < 1 or args.renew_before_days < 0:
        raise ValueError("--days and --ca-days must be at least 1, --renew-before-days at least 0")
    if args.renew_before_days >= args.days:
        raise ValueError("--renew-before-days must be less than --days, or every run would renew")
    return RenewConfig(
        namespace=args.namespace,
        service=args.service,
        secret=args.secret,
        ca_secret=args.ca_secret,
        webhook_configuration=args.webhook_configuration,
        webhooks=tuple(args.webhook_name) or (DEFAULT_WEBHOOK_NAME,),
        renew_before=dt.timedelta(days=args.renew_before_days),
        days=args.days,
        ca_days=args.ca_days,
    )


def run_renew(args: argparse.Namespace, api: CertApi | None = None) -> int:
    """`certs renew`: 0 renewed or nothing due, 1 the API failed, 2 bad arguments."""
    try:
        cfg = renew_config(args)
    except ValueError as exc:
        print(f"podsizer certs renew: {exc}", file=sys.stderr)
        return 2
    try:
        if api is None:
            from certs.kube import KubeCertApi

            api = KubeCertApi(args.kubeconfig)
        result = renew(api, cfg, dt.datetime.now(dt.UTC))
    except RenewError as exc:
        print(f"podsizer certs renew: {exc}", file=sys.stderr)
        return 1
    print(f"podsizer certs renew: {result.message}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the parsed `certs` command; returns the exit status."""
    if args.certs_command == "renew":
        return run_renew(args)
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
