#!/usr/bin/env python3
"""Packages charts/podsizer as a Helm chart repository (the chart's .tgz and an index.yaml) with real helm.

    scripts/package_chart.py                                  # dist/charts/podsizer-<version>.tgz, index.yaml
    scripts/package_chart.py --out DIR --url https://charts.example.com/podsizer

Serve DIR at the --url (any static web server, object store or GitHub Pages) and install from it:
`helm repo add podsizer URL && helm install podsizer podsizer/podsizer ...` (docs/install.md). An index
already in DIR is merged (older versions stay listed). Lints the chart (`helm lint --strict`) first and
refuses to package a failing chart. Standard library only; helm from $PODSIZER_CACHE/bin
(scripts/build_tools.py tools) unless --helm names another.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "podsizer"
DEFAULT_OUT = ROOT / "dist" / "charts"


def default_helm() -> Path:
    cache = Path(os.environ.get("PODSIZER_CACHE") or Path.home() / ".cache" / "podsizer")
    return cache / "bin" / "helm"


def chart_version(chart: Path = CHART) -> str:
    """The `version:` of Chart.yaml (read without a YAML library: one top-level line)."""
    match = re.search(r"^version:\s*['\"]?([^'\"\s]+)", (chart / "Chart.yaml").read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"package: {chart / 'Chart.yaml'} has no 'version:' line")
    return match.group(1)


def _helm(helm: Path, args: Sequence[str]) -> str:
    """Runs helm; exits naming the command and helm's own message when it fails."""
    proc = subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip()
        raise SystemExit(f"package: helm {' '.join(args)} failed:\n{message}")
    return proc.stdout


def package(helm: Path, out: Path, url: str | None, chart: Path = CHART) -> Path:
    """Lints the chart, packages it into out/ and writes (or merges) out/index.yaml; returns the .tgz path."""
    out.mkdir(parents=True, exist_ok=True)
    _helm(helm, ["lint", "--strict", str(chart)])
    _helm(helm, ["package", str(chart), "--destination", str(out)])
    tgz = out / f"{chart.name}-{chart_version(chart)}.tgz"
    if not tgz.is_file():
        raise SystemExit(f"package: helm package wrote no {tgz}")
    index_args = ["repo", "index", str(out)]
    if url:
        index_args += ["--url", url]
    if (out / "index.yaml").is_file():
        index_args += ["--merge", str(out / "index.yaml")]
    _helm(helm, index_args)
    return tgz


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="repository folder (%(default)s)")
    parser.add_argument(
        "--url",
        help="the URL the folder is served at, written into index.yaml (default: none, so the index names the"
        " .tgz relative to itself, which helm resolves against the repository URL)",
    )
    parser.add_argument("--helm", type=Path, default=default_helm(), help="helm binary (default %(default)s)")
    args = parser.parse_args(argv)
    if args.url is not None and not re.match(r"^https?://\S+$", args.url):
        parser.error(f"--url {args.url!r}: give an http(s):// URL, e.g. https://charts.example.com/podsizer")
    if not args.helm.is_file():
        print(f"package: helm not found at {args.helm}; run scripts/build_tools.py tools", file=sys.stderr)
        return 2
    tgz = package(args.helm, args.out, args.url)
    print(f"package: wrote {tgz} and {args.out / 'index.yaml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
