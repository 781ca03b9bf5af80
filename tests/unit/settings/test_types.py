"""The shared setting types (podsizer/settings/types.py): each parses its unit and words bad input alike,
naming the setting, in every role that reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from podsizer.settings import ROLES, RecommenderSettings, SettingsError, SharedSettings, WebhookSettings, load

ROLE_IDS = [role.__name__ for role in ROLES]


@pytest.mark.parametrize(
    ("role", "name", "bad", "message"),
    [
        (RecommenderSettings, "max_memory_bytes", "4TB", "invalid Kubernetes quantity '4TB'"),  # Bytes
        (RecommenderSettings, "max_cpu_cores", "lots", "invalid Kubernetes quantity 'lots'"),  # Cores
        (RecommenderSettings, "cpu_min_cores", "ten", "invalid Kubernetes quantity 'ten'"),  # a Cores knob
        (
            RecommenderSettings,
            "prometheus_max_response_bytes",
            "1536.5",
            "Input should be a valid integer, got a number with a fractional part",
        ),  # WholeBytes
        (RecommenderSettings, "query_step", "1.5s", "1.5s is not a whole number of seconds"),  # WholeSeconds
        (
            RecommenderSettings,
            "recency_half_life",
            "soon",
            "not a duration: 'soon' (e.g. 60s, 2m, 1h30m, 24h, or seconds)",
        ),  # a duration
        (RecommenderSettings, "cold_start_chunk", "90m", "5400s is not a whole number of hours"),
        (
            WebhookSettings,
            "log_level",
            "LOUD",
            "Input should be 'debug', 'info', 'warning' or 'error'",
        ),  # Lowered choice
        (
            WebhookSettings,
            "max_change_factor",
            "big",
            "Input should be a valid number, unable to parse string as a number",
        ),  # OptionalFactor
    ],
)
def test_a_bad_value_of_a_shared_type_is_refused_naming_the_setting(
    role: type[SharedSettings], name: str, bad: str, message: str
) -> None:
    variable, flag = f"PODSIZER_{name.upper()}", "--" + name.replace("_", "-")
    with pytest.raises(SettingsError) as err:
        load(role, env={variable: bad})
    assert str(err.value).startswith(f"{variable} ({flag}): {message}")


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_every_role_words_a_bad_quantity_the_same(role: type[SharedSettings]) -> None:
    with pytest.raises(SettingsError) as err:
        load(role, env={"PODSIZER_MAX_MEMORY_BYTES": "4TB"})
    assert str(err.value) == (
        "PODSIZER_MAX_MEMORY_BYTES (--max-memory-bytes): invalid Kubernetes quantity '4TB' (got '4TB')"
    )


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("max_memory_bytes", "512Gi", 512 * 2**30),
        ("max_cpu_cores", "64000m", 64.0),
        ("memory_min_bytes", "64Mi", 64 * 2**20),
        ("prometheus_max_response_bytes", "1Mi", 2**20),
        ("query_step", "1m30s", 90),
        ("recency_half_life", "12h", 43200.0),
        ("recency_half_life", "off", 0.0),
        ("namespaces", " shop, ml,,", ("shop", "ml")),
        ("price_file", "none", None),
        ("lease_namespace", "", None),
        ("cpu_limit_factor", "", None),
        ("log_level", " DEBUG ", "debug"),
        ("source_file", "/tmp/x.json", Path("/tmp/x.json")),
    ],
)
def test_a_shared_type_reads_its_unit(name: str, text: str, value: object) -> None:
    loaded = load(RecommenderSettings, env={f"PODSIZER_{name.upper()}": text})
    assert getattr(loaded, name) == value
