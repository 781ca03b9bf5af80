"""CrdCheckpointStore against an in-memory CustomObjectsApi: names, clusters, skips, conflicts, failures."""

from __future__ import annotations

import base64
import re

import pytest

from podsizer.api.identity import WorkloadRef
from podsizer.keys import CLUSTER_LABEL
from recommender.checkpoints import crdstore
from recommender.checkpoints.base import BlobKey, CheckpointStore, CheckpointStoreError
from recommender.checkpoints.crdstore import (
    MANAGED_BY_LABEL,
    MAX_BLOB_BYTES,
    CrdCheckpointStore,
    object_name,
)
from tests.support.custom_objects import FakeCustomObjects

WEB = WorkloadRef("shop", "Deployment", "web")
DB = WorkloadRef("data", "StatefulSet", "pg")
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _store(api: FakeCustomObjects, cluster: str = "", **kw: int) -> CrdCheckpointStore:
    return CrdCheckpointStore(cluster=cluster, custom_objects=api, **kw)


def test_round_trip_in_two_namespaces() -> None:
    api = FakeCustomObjects()
    store: CheckpointStore = _store(api)
    blobs: dict[BlobKey, bytes] = {WEB: b"\x00web\xff", DB: bytes(range(256))}
    result = store.write(blobs)
    assert (result.written, result.deleted, result.bytes, result.failed) == (2, 0, 5 + 256, ())
    assert store.read().blobs == blobs and store.read().unreadable == ()
    obj = api.objects[("shop", "deployment-web")]
    assert obj["metadata"]["labels"] == {MANAGED_BY_LABEL: "podsizer"}
    assert obj["spec"] == {
        "targetRef": {"kind": "Deployment", "name": "web"},
        "cluster": "",
        "data": base64.b64encode(b"\x00web\xff").decode(),
        "bytes": 5,
    }


def test_a_dropped_key_deletes_its_object() -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.write({WEB: b"a", DB: b"b"})
    result = store.write({WEB: b"a2"})
    assert (result.written, result.deleted) == (1, 1)
    assert set(api.objects) == {("shop", "deployment-web")}
    assert store.read().blobs == {WEB: b"a2"}


def test_an_unchanged_blob_is_not_rewritten() -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.write({WEB: b"same", DB: b"old"})
    version = api.objects[("shop", "deployment-web")]["metadata"]["resourceVersion"]
    api.calls.clear()
    result = store.write({WEB: b"same", DB: b"new"})
    assert (result.written, result.deleted, result.failed) == (1, 0, ())
    assert api.calls == ["list", "replace"]
    assert api.objects[("shop", "deployment-web")]["metadata"]["resourceVersion"] == version


def test_each_cluster_reads_and_deletes_only_its_own() -> None:
    api = FakeCustomObjects()
    east, west, single = _store(api, "east"), _store(api, "west"), _store(api)
    east.write({WorkloadRef("a", "Deployment", "x", "east"): b"e"})
    west.write({WorkloadRef("b", "Deployment", "y", "west"): b"w"})
    single.write({WorkloadRef("c", "Deployment", "z"): b"s"})
    assert east.read().blobs == {WorkloadRef("a", "Deployment", "x", "east"): b"e"}
    assert single.read().blobs == {WorkloadRef("c", "Deployment", "z"): b"s"}
    assert east.write({}).deleted == 1
    assert sorted(api.objects) == [("b", "deployment-y"), ("c", "deployment-z")]
    assert api.objects[("b", "deployment-y")]["metadata"]["labels"][CLUSTER_LABEL] == "west"


def test_blobs_of_other_clusters_are_left_out() -> None:
    api = FakeCustomObjects()
    result = _store(api, "east").write({WorkloadRef("a", "Deployment", "x", "west"): b"w"})
    assert (result.written, result.failed) == (0, ())
    assert api.objects == {}


def test_another_clusters_object_of_the_same_name_is_not_overwritten() -> None:
    api = FakeCustomObjects()
    _store(api, "west").write({WorkloadRef("shop", "Deployment", "web", "west"): b"w"})
    result = _store(api, "east").write({WorkloadRef("shop", "Deployment", "web", "east"): b"e"})
    (line,) = result.failed
    assert "shop/deployment-web" in line and "another cluster" in line
    assert api.objects[("shop", "deployment-web")]["spec"]["cluster"] == "west"


def test_a_damaged_object_is_reported_and_the_others_read() -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.write({WEB: b"good", DB: b"also good"})
    api.objects[("data", "statefulset-pg")]["spec"]["data"] = "not base64!"
    result = store.read()
    assert result.blobs == {WEB: b"good"}
    (line,) = result.unreadable
    assert line.startswith("UsageCheckpoint data/statefulset-pg: spec.data is not base64")


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ({"targetRef": {"kind": "Pod", "name": "web"}}, "unsupported workload kind"),
        ({"targetRef": {"kind": "Deployment"}}, "needs a kind and a name"),
        ({"bytes": 99}, "spec.bytes says 99"),
        ({"cluster": "east"}, "not this store's cluster"),
    ],
)
def test_an_object_that_does_not_decode_says_why(spec: dict[str, object], why: str) -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.write({WEB: b"good"})
    api.objects[("shop", "deployment-web")]["spec"].update(spec)
    result = store.read()
    assert result.blobs == {}
    (line,) = result.unreadable
    assert line.startswith("UsageCheckpoint shop/deployment-web: ") and why in line


def test_a_damaged_object_is_replaced_by_the_next_write() -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.write({WEB: b"good"})
    api.objects[("shop", "deployment-web")]["spec"]["data"] = "%%%"
    assert store.write({WEB: b"good"}).written == 1
    assert store.read().blobs == {WEB: b"good"}


def test_a_conflict_rereads_and_replaces() -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.write({WEB: b"v1"})
    api.fail_next["replace"] = [409]
    result = store.write({WEB: b"v2"})
    assert (result.written, result.failed) == (1, ())
    assert api.calls[-3:] == ["replace", "get", "replace"]
    assert store.read().blobs == {WEB: b"v2"}


def test_an_object_created_after_the_list_is_replaced() -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.write({WEB: b"v1"})
    api.hidden.add(("shop", "deployment-web"))  # another writer's object, made after this write's list
    api.calls.clear()
    result = store.write({WEB: b"v2"})
    assert (result.written, result.failed) == (1, ())
    assert api.calls == ["list", "create", "get", "replace"]
    assert api.objects[("shop", "deployment-web")]["spec"]["data"] == base64.b64encode(b"v2").decode()


def test_an_object_deleted_after_the_list_is_created_again() -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.write({WEB: b"v1"})
    api.fail_next["replace"] = [404]
    result = store.write({WEB: b"v2"})
    assert (result.written, result.failed) == (1, ())
    assert api.calls[-3:] == ["replace", "get", "replace"]


def test_failures_are_lines_unless_every_write_fails() -> None:
    api = FakeCustomObjects()
    api.namespaces = {"shop"}
    result = _store(api).write({WEB: b"ok", DB: b"lost"})
    assert result.written == 1
    (line,) = result.failed
    assert line == "cannot write UsageCheckpoint data/statefulset-pg: HTTP 404 Not Found"


def test_every_write_failing_raises() -> None:
    api = FakeCustomObjects()
    api.fail["create"] = 403
    with pytest.raises(
        CheckpointStoreError, match=r"cannot write any usagecheckpoints.podsizer.io: .*\(and 1 more\)"
    ):
        _store(api).write({WEB: b"a", DB: b"b"})


def test_a_list_failure_raises_naming_the_resource() -> None:
    api = FakeCustomObjects()
    api.fail["list"] = 503
    with pytest.raises(CheckpointStoreError, match=r"cannot list usagecheckpoints\.podsizer\.io .*HTTP 503"):
        _store(api).read()
    with pytest.raises(CheckpointStoreError):
        _store(api).write({WEB: b"a"})


def test_an_oversized_blob_fails_alone() -> None:
    api = FakeCustomObjects()
    result = _store(api).write({WEB: b"x" * (MAX_BLOB_BYTES + 1), DB: b"small"})
    assert result.written == 1 and ("shop", "deployment-web") not in api.objects
    (line,) = result.failed
    assert "shop/deployment-web" in line and str(MAX_BLOB_BYTES) in line


def test_the_largest_blob_fits_the_crd_data_limit() -> None:
    assert len(base64.b64encode(b"x" * MAX_BLOB_BYTES)) <= crdstore.MAX_DATA_CHARS


def test_key_none_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="key None"):
        _store(FakeCustomObjects()).write({None: b"x"})


def test_reads_every_page() -> None:
    api = FakeCustomObjects()
    store = _store(api)
    store.objects.page_size = 3
    blobs: dict[BlobKey, bytes] = {WorkloadRef("ns", "Deployment", f"w{i}"): bytes([i]) for i in range(10)}
    store.write(blobs)
    assert store.read().blobs == blobs
    assert api.calls.count("list") == 1 + 4  # the write's list (nothing yet), the read's 4 pages of 3


def test_many_writes_on_the_thread_pool_all_land() -> None:
    api = FakeCustomObjects()
    store = _store(api, concurrency=8)
    blobs: dict[BlobKey, bytes] = {
        WorkloadRef(f"ns{i % 7}", "Deployment", f"w{i}"): f"blob {i}".encode() for i in range(200)
    }
    result = store.write(blobs)
    assert (result.written, result.failed) == (200, ())
    assert store.read().blobs == blobs


def test_long_names_are_cut_with_a_hash() -> None:
    a = WorkloadRef("ns", "DeploymentConfig", "a" * 250 + "x")
    b = WorkloadRef("ns", "DeploymentConfig", "a" * 250 + "y")
    names = {object_name(a), object_name(b)}
    assert len(names) == 2
    for name in names:
        assert len(name) <= 253 and SUBDOMAIN.match(name), name
        assert name.startswith("deploymentconfig-aaaa")
    assert object_name(WEB) == WEB.recommendation_name == "deployment-web"


def test_an_invalid_name_is_made_valid() -> None:
    name = object_name(WorkloadRef("ns", "Job", "Nightly_Report."))
    assert SUBDOMAIN.match(name) and name.startswith("job-nightly-report-")


def test_an_invalid_cluster_or_concurrency_is_refused() -> None:
    with pytest.raises(ValueError, match="label value"):
        CrdCheckpointStore(cluster="east coast", custom_objects=FakeCustomObjects())
    with pytest.raises(ValueError, match="at least 1"):
        CrdCheckpointStore(custom_objects=FakeCustomObjects(), concurrency=0)
