"""ReloadingTLS: a changed pair is picked up, a broken one keeps the old pair, checks are rate-limited."""

from __future__ import annotations

import os
from pathlib import Path

from certs.generate import Bundle, generate_bundle, write_bundle
from certs.reload import ReloadingTLS


class Ticks:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _install(root: Path, version: str, bundle: Bundle) -> None:
    """Lay files out like a Secret volume: <root>/..<version>/, ..data -> it, tls.crt -> ..data/tls.crt."""
    write_bundle(bundle, root / f"..{version}")
    tmp = root / "..data_tmp"
    tmp.symlink_to(f"..{version}")
    os.replace(tmp, root / "..data")
    for name in ("tls.crt", "tls.key"):
        if not (root / name).is_symlink():
            (root / name).symlink_to(f"..data/{name}")


def test_rotation_is_picked_up_after_the_interval(tmp_path: Path) -> None:
    first, second = generate_bundle("s", "n"), generate_bundle("s", "n")
    _install(tmp_path, "v1", first)
    ticks = Ticks()
    tls = ReloadingTLS(tmp_path / "tls.crt", tmp_path / "tls.key", check_interval=1.0, monotonic=ticks)
    ctx1 = tls.current_context()
    _install(tmp_path, "v2", second)
    assert tls.current_context() is ctx1, "checked at most once per interval"
    ticks.t = 1.5
    ctx2 = tls.current_context()
    assert ctx2 is not ctx1
    assert tls.reloads == 1
    assert ctx2.minimum_version.name == "TLSv1_2"
    assert tls.current_context() is ctx2


def test_mismatched_pair_keeps_serving_the_old_one(tmp_path: Path) -> None:
    first, second = generate_bundle("s", "n"), generate_bundle("s", "n")
    write_bundle(first, tmp_path)
    tls = ReloadingTLS(tmp_path / "tls.crt", tmp_path / "tls.key", check_interval=0.0)
    ctx1 = tls.current_context()
    (tmp_path / "tls.crt").write_bytes(second.serving.cert_pem)  # key not rotated yet: mismatch
    assert tls.reload_if_changed() is False
    assert tls.current_context() is ctx1
    assert tls.failures >= 1
    (tmp_path / "tls.key").write_bytes(second.serving.key_pem)
    assert tls.reload_if_changed() is True


def test_server_context_is_tls12_minimum_with_sni_switch(tmp_path: Path) -> None:
    write_bundle(generate_bundle("s", "n"), tmp_path)
    tls = ReloadingTLS(tmp_path / "tls.crt", tmp_path / "tls.key")
    assert tls.server_context.minimum_version.name == "TLSv1_2"
    assert tls.server_context.sni_callback is not None
