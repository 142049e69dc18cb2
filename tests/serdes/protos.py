"""The .proto files of the serdes tests (the ``protos`` fixture compiles them with ``tests/support/protos.py``)."""

from __future__ import annotations

PROTOS: dict[str, str] = {
    # An imported file (registered as a reference under its import path) ...
    "sktest/common/address.proto": """
syntax = "proto3";
package sktest.common;
message Address { string city = 1; int32 zip = 2; }
""",
    # ... and a file importing it and a well-known type, with a nested message and an enum.
    "sktest/shop/order.proto": """
syntax = "proto3";
package sktest.shop;
import "sktest/common/address.proto";
import "google/protobuf/timestamp.proto";
message Customer { string name = 1; }
message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  int64 qty = 2;
  Status status = 3;
  repeated Line lines = 4;
  sktest.common.Address address = 5;
  google.protobuf.Timestamp created = 6;
  optional string note = 7;
}
""",
}
