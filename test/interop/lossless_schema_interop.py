"""Big numbers in schemas, with confluent-kafka's own serializers
(test/integration/stream/stream-lossless-schema-python.test.ts).

  produce FORMAT BOOTSTRAP REGISTRY_URL TOPIC COUNT SCHEMA_STR
      FORMAT json: JSONSerializer (validating against SCHEMA_STR, auto-registering it under
      TOPIC-value) writes COUNT account(i) records; avro: AvroSerializer the same with
      avro_account(i). Keyed by the email. Prints the schema id it used.
  consume FORMAT BOOTSTRAP REGISTRY_URL TOPIC COUNT TIMEOUT_S
      a plain Consumer (read_committed) reads TOPIC from the beginning; JSONDeserializer
      (validate on) or AvroDeserializer, each with no schema of its own: the writer schema is the
      one the registry holds under the id in each record, here the clean schema veil registered.
      One JSON line per record (partition, offset, key, schema id, decoded value); Python's json
      writes integers exactly, so the reader must read them losslessly too.

Python's ints are exact: a schema number that lost digits (`"maximum": 9007199254740993`
registered as 9007199254740992) makes the deserializer refuse a record the raw schema accepts.
"""
import json
import os
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from committed_reader import read_committed  # noqa: E402
from plain_producer import produce_all  # noqa: E402

U64_MAX = 2**64 - 1
I64_MAX = 2**63 - 1
I64_MIN = -(2**63)
ODD = 2**53 + 1  # 9007199254740993, the first integer a double cannot hold


def account(i):
    """a record the raw JSON Schema of the test accepts (and, with lost digits, its clean form would not)"""
    return {
        "id": U64_MAX - i,
        "serial": ODD,
        "code": [ODD, ODD + 2, U64_MAX][i % 3],
        "version": ODD,
        "quota": ODD + i,
        "ratio": 1.0,
        "email": f"big{i}@example.com",
        "cards": [{"number": f"4111 1111 1111 {1000 + i:04d}", "limit": [ODD, U64_MAX][i % 2]}],
        "profile": None if i % 5 == 0 else {"name": f"Big Person {i}", "tier": ODD},
    }


def avro_account(i):
    return {
        "id": I64_MAX - i,
        "email": f"big{i}@example.com",
        "cards": [{"number": 4111111111111111 + i, "limit": I64_MIN + i}],
        "profile": None if i % 5 == 0 else {"name": f"Big Person {i}", "tier": ODD + i},
        "serial": None if i % 2 else ODD + i,
        "ratio": 1.0,
        "counters": {"b": I64_MAX, "1": I64_MIN},
    }


def produce(fmt, bootstrap, registry_url, topic, count, schema_str):
    registry = SchemaRegistryClient({"url": registry_url})
    if fmt == "json":
        serializer, record = JSONSerializer(schema_str, registry, conf={"auto.register.schemas": True}), account
    else:
        serializer, record = AvroSerializer(registry, schema_str, conf={"auto.register.schemas": True}), avro_account
    ctx = SerializationContext(topic, MessageField.VALUE)
    records = ((record(i)["email"].encode(), serializer(record(i), ctx), None) for i in range(count))
    print(json.dumps({"schema_id": produce_all(bootstrap, topic, records)}))


def consume(fmt, bootstrap, registry_url, topic, count, timeout_s):
    registry = SchemaRegistryClient({"url": registry_url})
    if fmt == "json":
        deserializer = JSONDeserializer(None, schema_registry_client=registry, conf={"validate": True})
    else:
        deserializer = AvroDeserializer(registry)

    def describe(msg):
        value = deserializer(msg.value(), SerializationContext(topic, MessageField.VALUE))
        return {"schema_id": int.from_bytes(msg.value()[1:5], "big"), "value": value}

    read_committed(bootstrap, topic, count, timeout_s, describe)


def main(argv):
    mode, fmt = argv[1], argv[2]
    if fmt not in ("json", "avro"):
        raise SystemExit(f"unknown format {fmt}")
    if mode == "produce":
        produce(fmt, argv[3], argv[4], argv[5], int(argv[6]), argv[7])
    elif mode == "consume":
        consume(fmt, argv[3], argv[4], argv[5], int(argv[6]), float(argv[7]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv)
