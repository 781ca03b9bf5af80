"""Prometheus remote-read messages (prompb remote.proto and types.proto, the fields a read uses), built here.

No generated code and no protoc: the file descriptor below restates the upstream field numbers, so the
recommender (and bench/bench_read_paths.py) can ask /api/v1/read for streamed XOR chunks (or samples) with
the `protobuf` package alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

_F = descriptor_pb2.FieldDescriptorProto
_FIELDS: dict[str, list[tuple[str, int, int, int, str]]] = {
    # message: (field, number, type, label, type name of a message/enum field)
    "Sample": [("value", 1, _F.TYPE_DOUBLE, _F.LABEL_OPTIONAL, ""), ("timestamp", 2, _F.TYPE_INT64, 1, "")],
    "Label": [("name", 1, _F.TYPE_STRING, 1, ""), ("value", 2, _F.TYPE_STRING, 1, "")],
    "LabelMatcher": [
        ("type", 1, _F.TYPE_INT32, 1, ""),  # EQ=0 NEQ=1 RE=2 NRE=3; an int32 reads the enum's varint the same
        ("name", 2, _F.TYPE_STRING, 1, ""),
        ("value", 3, _F.TYPE_STRING, 1, ""),
    ],
    "TimeSeries": [
        ("labels", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.Label"),
        ("samples", 2, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.Sample"),
    ],
    "Chunk": [
        ("min_time_ms", 1, _F.TYPE_INT64, 1, ""),
        ("max_time_ms", 2, _F.TYPE_INT64, 1, ""),
        ("type", 3, _F.TYPE_INT32, 1, ""),  # XOR=1
        ("data", 4, _F.TYPE_BYTES, 1, ""),
    ],
    "ChunkedSeries": [
        ("labels", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.Label"),
        ("chunks", 2, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.Chunk"),
    ],
    "Query": [
        ("start_timestamp_ms", 1, _F.TYPE_INT64, 1, ""),
        ("end_timestamp_ms", 2, _F.TYPE_INT64, 1, ""),
        ("matchers", 3, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.LabelMatcher"),
    ],
    "ReadRequest": [
        ("queries", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.Query"),
        ("accepted_response_types", 2, _F.TYPE_INT32, _F.LABEL_REPEATED, ""),  # SAMPLES=0, XOR chunks=1
    ],
    "QueryResult": [("timeseries", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.TimeSeries")],
    "ReadResponse": [("results", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.QueryResult")],
    "ChunkedReadResponse": [
        ("chunked_series", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".prompb.ChunkedSeries"),
        ("query_index", 2, _F.TYPE_INT64, 1, ""),
    ],
}


@dataclass(frozen=True)
class RemoteRead:
    """The message classes of one descriptor pool."""

    read_request: type[Message]
    read_response: type[Message]
    chunked_read_response: type[Message]


def remote_read_messages() -> RemoteRead:
    """Builds the prompb messages in a pool of their own (the default pool is left alone)."""
    proto = descriptor_pb2.FileDescriptorProto(name="podsizer_prompb.proto", package="prompb")
    proto.syntax = "proto3"
    for name, fields in _FIELDS.items():
        msg = proto.message_type.add(name=name)
        for field, number, ftype, label, type_name in fields:
            f = msg.field.add(name=field, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)

    def cls(name: str) -> type[Message]:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"prompb.{name}"))

    return RemoteRead(cls("ReadRequest"), cls("ReadResponse"), cls("ChunkedReadResponse"))
