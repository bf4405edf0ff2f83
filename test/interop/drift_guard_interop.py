"""Drift the unmapped guard must catch in decoded records, produced with confluent-kafka's own
serializers through the registry (test/security/stream/stream-drift-guard.test.ts).

  produce FORMAT BOOTSTRAP REGISTRY_URL TOPIC DIR PER_CASE
      FORMAT avro, protobuf or json-schema: writes PER_CASE records of each case below (ids
      case * 1000 + n), keyed by their email, with AvroSerializer, ProtobufSerializer or
      JSONSerializer (auto-registering the schema under TOPIC-value). DIR is a scratch directory
      for the .proto files. Each record carries its id in the header `rid`. Prints one JSON line
      per record: id, case, and the values sent as personal data (each unique to its record).

Cases: a clean record (business codes in its map: a GTIN, a 16-digit order id); an email as UTF-8
in a `bytes` field (avro, protobuf); a national-format phone under the map key `mobile`, a name
under `fullName`, a street address under `address`, a Maestro 6304 card under `pan`; and
(protobuf) a record written by a newer class whose `backup_email` the registered schema does
not declare — the producer's `use.latest.version`, which serialises under the older schema id.
"""
import importlib
import json
import os
import subprocess
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plain_producer import produce_all  # noqa: E402

AVRO = json.dumps({
    "type": "record", "name": "Customer", "namespace": "drift",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "email", "type": "string"},
        {"name": "cards", "type": {"type": "array", "items": {"type": "record", "name": "Card", "fields": [{"name": "number", "type": "string"}]}}},
        {"name": "profile", "type": {"type": "record", "name": "Profile", "fields": [{"name": "name", "type": "string"}]}},
        {"name": "note", "type": "string"},
        {"name": "attachment", "type": ["null", "bytes"], "default": None},
        {"name": "attributes", "type": {"type": "map", "values": "string"}, "default": {}},
    ],
})

JSON_SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Customer", "type": "object",
    "properties": {
        "id": {"type": "integer"}, "email": {"type": "string"},
        "cards": {"type": "array", "items": {"type": "object", "properties": {"number": {"type": "string"}}}},
        "profile": {"type": "object", "properties": {"name": {"type": "string"}}},
        "note": {"type": "string"},
        "attributes": {"type": "object", "additionalProperties": {"type": "string"}},
    },
})

PROTO = """syntax = "proto3";
package %s;
message Customer {
  int64 id = 1;
  string email = 2;
  repeated Card cards = 3;
  Profile profile = 4;
  string note = 5;
  bytes attachment = 6;
  map<string, string> attributes = 7;
%s
  message Card { string number = 1; }
  message Profile { string name = 1; }
}
"""


def luhn(body):
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def gs1(body):
    total = sum(int(c) * (3 if i % 2 == 0 else 1) for i, c in enumerate(reversed(body)))
    return str((10 - total % 10) % 10)


def visa(i):
    body = f"4{i:014d}"
    return body + luhn(body)


def maestro6304(i):
    body = f"6304{i:011d}"
    return body + luhn(body)


def base(i):
    email = f"drift.{i}@example.com"
    card = visa(700000 + i)
    name = f"Ann Lee{chr(97 + i % 26)}{chr(97 + (i // 26) % 26)}"
    return {"id": i, "email": email, "cards": [{"number": card}], "profile": {"name": name}, "note": f"deliver after 5pm, order {i}"}, [email, card, name]


def case_values(case, i):
    """the attributes, attachment and extra personal values of a case"""
    if case == "clean":
        gtin = f"400{i:09d}"
        return {"attributes": {"gtin": gtin + gs1(gtin), "orderId": visa(900000 + i), "colour": "blue"}}, []
    if case == "bytes":
        e = f"attached.{i}@example.com"
        return {"attachment": e.encode()}, [e]
    if case == "mobile":
        p = f"07911 {100000 + i:06d}"
        return {"attributes": {"mobile": p}}, [p]
    if case == "fullName":
        n = f"Jean Dupont{chr(97 + i % 26)}{chr(97 + (i // 26) % 26)}"
        return {"attributes": {"fullName": n}}, [n]
    if case == "address":
        a = f"{10 + i} High Street, London"
        return {"attributes": {"address": a}}, [a]
    if case == "pan":
        c = maestro6304(i)
        return {"attributes": {"pan": c}}, [c]
    raise SystemExit(f"unknown case {case}")


CASES = ["clean", "bytes", "mobile", "fullName", "address", "pan"]


def compile_proto(directory, name, text):
    with open(os.path.join(directory, name + ".proto"), "w") as f:
        f.write(text)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{directory}", f"--python_out={directory}", name + ".proto"], check=True)
    sys.path.insert(0, directory)
    return importlib.import_module(name + "_pb2").Customer


def pb_message(cls, value):
    m = cls(id=value["id"], email=value["email"], note=value["note"])
    for c in value["cards"]:
        m.cards.add().number = c["number"]
    m.profile.name = value["profile"]["name"]
    if "attachment" in value:
        m.attachment = value["attachment"]
    for k, v in value.get("attributes", {}).items():
        m.attributes[k] = v
    if "backup_email" in value:
        m.backup_email = value["backup_email"]
    return m


def produce(fmt, bootstrap, registry_url, topic, directory, per_case):
    registry = SchemaRegistryClient({"url": registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    cases = [c for c in CASES if not (fmt == "json-schema" and c == "bytes")]
    if fmt == "avro":
        serializer = AvroSerializer(registry, AVRO, conf={"auto.register.schemas": True})
        encode = lambda v: serializer(v, ctx)  # noqa: E731
    elif fmt == "json-schema":
        serializer = JSONSerializer(JSON_SCHEMA, registry, conf={"auto.register.schemas": True})
        encode = lambda v: serializer(v, ctx)  # noqa: E731
    else:
        old = compile_proto(directory, "drift_v1", PROTO % ("drift", ""))
        # the newer class: one field more, in a package of its own (Python's pool holds one drift.Customer)
        new = compile_proto(directory, "drift_v2", PROTO % ("drift.v2", "  string backup_email = 8;"))
        serializer = ProtobufSerializer(old, registry, {"use.deprecated.format": False, "auto.register.schemas": True})
        newer = ProtobufSerializer(new, registry, {"use.deprecated.format": False, "auto.register.schemas": False, "use.latest.version": True})
        encode = lambda v: (newer if "backup_email" in v else serializer)(pb_message(new if "backup_email" in v else old, v), ctx)  # noqa: E731
        cases = cases + ["unknown"]

    def records():
        for k, case in enumerate(cases):
            for n in range(per_case):
                i = k * 1000 + n
                value, personal = base(i)
                if case == "unknown":
                    extra, more = {"backup_email": f"backup.{i}@example.com"}, [f"backup.{i}@example.com"]
                else:
                    extra, more = case_values(case, i)
                value.update(extra)
                yield value["email"].encode(), encode(value), [("rid", str(i).encode())]
                print(json.dumps({"id": i, "case": case, "personal": personal + more}))

    produce_all(bootstrap, topic, records())


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "produce":
        produce(args[0], args[1], args[2], args[3], args[4], int(args[5]))
    else:
        raise SystemExit(f"unknown mode {mode}")
