"""The .proto files of the Spark tests (the ``protos`` fixture compiles them with ``tests/support/protos.py``)."""

from __future__ import annotations

PROTOS: dict[str, str] = {
    "skspark/all_types.proto": """
syntax = "proto3";
package skspark;
import "google/protobuf/timestamp.proto";
message Item { string sku = 1; int32 qty = 2; }
message AllTypes {
  enum Color { RED = 0; GREEN = 1; BLUE = 2; }
  int32 i32 = 1;
  sint32 s32 = 2;
  sfixed32 sf32 = 3;
  int64 i64 = 4;
  sint64 s64 = 5;
  sfixed64 sf64 = 6;
  uint32 u32 = 7;
  fixed32 f32 = 8;
  uint64 u64 = 9;
  fixed64 f64 = 10;
  double d = 11;
  float f = 12;
  bool b = 13;
  string s = 14;
  bytes raw = 15;
  Color color = 16;
  Item item = 17;
  repeated Item items = 18;
  repeated int32 numbers = 19;
  repeated Color colors = 20;
  map<string, int64> counts = 21;
  map<string, Item> by_sku = 22;
  google.protobuf.Timestamp at = 23;
  optional string note = 24;
  oneof choice { string text = 25; int32 code = 26; }
}
""",
    "skspark/order_v1.proto": """
syntax = "proto3";
package skspark.v1;
message Order { string id = 1; int64 qty = 2; }
""",
    "skspark/order_v2.proto": """
syntax = "proto3";
package skspark.v2;
message Order { string id = 1; int64 qty = 2; string customer = 3; }
""",
    "skspark/order_v3.proto": """
syntax = "proto3";
package skspark.v3;
message Order { string id = 1; string customer = 3; repeated string tags = 4; }
""",
}
