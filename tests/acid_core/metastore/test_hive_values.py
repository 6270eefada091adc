"""``acid_core.metastore.hive.values``: Hive 4's rebalance fields added to older Thrift bindings."""

from __future__ import annotations

import logging

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TType
from thrift.transport import TTransport

from acid_core.metastore.hive import values


def test_thrift_types_rebalance_fields_round_trip_on_the_wire():
    ttypes = values.thrift_types()
    request = ttypes.CompactionRequest(dbname="db", tablename="t", type=3)
    request.numberOfBuckets, request.orderByClause = 4, "id"  # set as the adapter sets them
    buffer = TTransport.TMemoryBuffer()
    request.write(TBinaryProtocol.TBinaryProtocol(buffer))
    # The extended spec reads the same bytes back with fields 10 and 11 (what Hive 4's server reads).
    echo = ttypes.CompactionRequest()
    protocol = TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(buffer.getvalue()))
    protocol.readStruct(echo, ttypes.CompactionRequest.thrift_spec)
    assert (echo.dbname, echo.numberOfBuckets, echo.orderByClause) == ("db", 4, "id")


def test_add_fields_newer_idl_that_has_them_is_left_alone_quietly(caplog):
    class Newer:
        thrift_spec = (
            None,
            (1, TType.I64, "id", None, None),
            (2, TType.STRING, "poolname", "UTF8", None),
            (3, TType.I32, "numberOfBuckets", None, None),
            (4, TType.STRING, "orderByClause", "UTF8", None),
        )

    with caplog.at_level(logging.WARNING):
        values._add_fields(Newer, 17, write=False)
    assert len(Newer.thrift_spec) == 5
    assert caplog.records == []


def test_add_fields_unknown_idl_is_left_alone_and_says_so(caplog):
    class Changed:
        thrift_spec = (None, (1, TType.I64, "id", None, None), (2, TType.I64, "other", None, None))

    with caplog.at_level(logging.WARNING):
        values._add_fields(Changed, 17, write=False)
    assert len(Changed.thrift_spec) == 3
    assert "Changed has 2 fields, expected 16: Hive 4's rebalance fields not added" in caplog.text
