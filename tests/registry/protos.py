"""Test .proto files for the registry's end-to-end Protobuf tests, compiled at test time by
``tests/support/protos.py`` (into protobuf's default descriptor pool, so every file name and package here is
unique to these tests)."""

from __future__ import annotations

#: import path -> .proto text. ``other.proto`` is imported by ``skt_e2e_invoice.proto``; confluent-kafka's
#: serializer registers it under the subject ``other.proto`` (its reference subject name strategy).
PROTOS: dict[str, str] = {
    # Order is message [0]; its third nested message Line is [0, 2]; Customer is [1].
    "skt_e2e_shop.proto": """
syntax = "proto3";
package skt.e2e.shop;

message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Note { string text = 1; }
  message Discount { int32 percent = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  repeated Line lines = 2;
  Status status = 3;
  map<string, string> tags = 4;
  oneof payment { string card = 5; int64 voucher = 6; }
  Discount discount = 7;
}

message Customer { string name = 1; int64 id = 2; }
""",
    "skt_e2e_event.proto": """
syntax = "proto3";
package skt.e2e.event;

import "google/protobuf/timestamp.proto";

message Event {
  string name = 1;
  google.protobuf.Timestamp at = 2;
}
""",
    "other.proto": """
syntax = "proto3";
package skt.e2e.other;

message Money {
  string currency = 1;
  int64 units = 2;
}
""",
    "skt_e2e_invoice.proto": """
syntax = "proto3";
package skt.e2e.invoice;

import "other.proto";

message Invoice {
  string id = 1;
  skt.e2e.other.Money total = 2;
  repeated skt.e2e.other.Money items = 3;
}
""",
}
