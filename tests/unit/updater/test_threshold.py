"""The threshold: more than a fraction off, or outside the band; GPU changes always count."""

from __future__ import annotations

from podsizer.podspec import Change
from tests.unit.updater.builders import pod
from updater.threshold import Band, Threshold, outside, running_changes


def _c(
    resource: str,
    old: str | None,
    new: str | None,
    field: str = "requests",
    section: str = "containers",
    index: int = 0,
) -> Change:
    return Change(section, index, "app", field, resource, old, new)  # type: ignore[arg-type]


def test_more_than_ten_percent_off_is_outside_and_ten_percent_is_not() -> None:
    assert outside(_c("cpu", "1", "800m"), Threshold())
    assert not outside(_c("cpu", "1", "900m"), Threshold())


def test_the_fraction_is_configurable() -> None:
    assert not outside(_c("memory", "1Gi", "700Mi"), Threshold(relative=0.5))


def test_outside_the_band_counts_even_when_close_and_only_with_the_band_rule_on() -> None:
    band = Band(lower={"cpu": "2"}, upper={"cpu": "4"})
    assert outside(_c("cpu", "1", "1050m"), Threshold(), band)
    assert not outside(_c("cpu", "1", "1050m"), Threshold(use_band=False), band)


def test_a_gpu_change_and_a_new_value_always_count() -> None:
    assert outside(_c("nvidia.com/gpu", "2", "1"), Threshold(relative=10))
    assert outside(_c("cpu", None, "100m"), Threshold(relative=10))


def test_finished_init_containers_do_not_matter_but_sidecars_do() -> None:
    p = pod()
    p["spec"]["initContainers"] = [{"name": "init"}, {"name": "proxy", "restartPolicy": "Always"}]
    changes = [
        _c("cpu", "1", "2", section="initContainers", index=0),
        _c("cpu", "1", "2", section="initContainers", index=1),
        _c("cpu", "1", "2"),
    ]
    kept = running_changes(p, changes)
    assert [(c.section, c.index) for c in kept] == [("initContainers", 1), ("containers", 0)]
