"""podsizer.apierrors: the one rule that tells an API failure apart and names it, for every caller."""

from __future__ import annotations

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from podsizer.apierrors import KubeApiError, api_error, describe, failing_as, status_code


def test_an_api_exception_has_its_status_and_is_described_by_it() -> None:
    exc = ApiException(status=403, reason="Forbidden")
    assert status_code(exc) == 403 and api_error(exc)
    assert describe(exc) == "HTTP 403 Forbidden"


def test_a_transport_failure_is_an_api_error_without_a_status() -> None:
    exc = urllib3.exceptions.ProtocolError("connection aborted")
    assert status_code(exc) is None and api_error(exc)
    assert describe(exc) == "ProtocolError: connection aborted"
    assert api_error(ConnectionRefusedError("refused"))


def test_a_programming_error_is_no_api_error() -> None:
    assert not api_error(KeyError("spec")) and status_code(KeyError("spec")) is None


def test_failing_as_names_what_failed_and_keeps_the_status() -> None:
    named = r"^cannot read Secret ns/tls: HTTP 404 Not Found$"
    with pytest.raises(KubeApiError, match=named) as err, failing_as("cannot read Secret ns/tls"):
        raise ApiException(status=404, reason="Not Found")
    assert err.value.status == 404 and isinstance(err.value.__cause__, ApiException)


def test_failing_as_lets_other_errors_and_named_failures_through() -> None:
    with pytest.raises(KeyError), failing_as("cannot list pods"):
        raise KeyError("spec")
    inner = KubeApiError("cannot write Recommendation a/b: HTTP 500 Boom", 500)
    with pytest.raises(KubeApiError) as err, failing_as("cannot list pods"):
        raise inner
    assert err.value is inner
