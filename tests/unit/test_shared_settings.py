"""One environment configures the recommender and the webhook for the same standalone JSON store."""

from pathlib import Path

import pytest

from recommender.config import load_settings as recommender_settings
from webhook.settings import load_settings as webhook_settings


@pytest.mark.parametrize("store", ["json", "file"])
def test_both_read_the_same_store_file(store: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "recs.json"
    env = {"PODSIZER_STORE": store, "PODSIZER_STORE_FILE": str(path)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    rec = recommender_settings(env=env)
    hook = webhook_settings()
    assert (rec.store, rec.store_file) == ("json", path)
    assert (hook.store, hook.store_file) == ("file", path)


def test_defaults_point_at_the_same_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PODSIZER_STORE_FILE", raising=False)
    assert recommender_settings(env={}).store_file == webhook_settings().store_file
