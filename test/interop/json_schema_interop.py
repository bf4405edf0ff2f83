"""JSON Schema interop with confluent-kafka's own serializers (test/integration/stream/stream-json-schema-python.test.ts).

  produce BOOTSTRAP REGISTRY_URL TOPIC COUNT SCHEMA_JSON
      JSONSerializer (auto-registering SCHEMA_JSON under TOPIC-value) writes COUNT customer
      records, keyed by their email, with a plain Producer; prints the schema id it used.
  consume BOOTSTRAP REGISTRY_URL TOPIC COUNT TIMEOUT_S
      a plain Consumer (read_committed) reads TOPIC from the beginning; JSONDeserializer without
      a schema of its own (schema_str=None: the writer schema, fetched from the registry by the id
      in each record) decodes and validates each value. Prints one JSON line per record:
      partition, offset, key, schema id, decoded value. Goes on a while after COUNT records so
      that duplicates would show.
"""
import json
import os
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from committed_reader import read_committed  # noqa: E402
from plain_producer import produce_all  # noqa: E402


def customer(i):
    return {
        "id": i,
        "email": f"py{i}@example.com",
        "cards": [{"number": f"4111 1111 1111 {1000 + i:04d}", "brand": "visa"}],
        "profile": None if i % 5 == 0 else {"name": f"Py Person {i}", "tier": i % 3},
    }


def produce(bootstrap, registry_url, topic, count, schema_str):
    registry = SchemaRegistryClient({"url": registry_url})
    serializer = JSONSerializer(schema_str, registry, conf={"auto.register.schemas": True})
    ctx = SerializationContext(topic, MessageField.VALUE)
    records = ((customer(i)["email"].encode(), serializer(customer(i), ctx), None) for i in range(count))
    print(json.dumps({"schema_id": produce_all(bootstrap, topic, records)}))


def consume(bootstrap, registry_url, topic, count, timeout_s):
    registry = SchemaRegistryClient({"url": registry_url})
    deserializer = JSONDeserializer(None, schema_registry_client=registry)

    def describe(msg):
        value = deserializer(msg.value(), SerializationContext(topic, MessageField.VALUE))
        return {"schema_id": int.from_bytes(msg.value()[1:5], "big"), "value": value}

    read_committed(bootstrap, topic, count, timeout_s, describe)


def main(argv):
    mode = argv[1]
    if mode == "produce":
        produce(argv[2], argv[3], argv[4], int(argv[5]), argv[6])
    elif mode == "consume":
        consume(argv[2], argv[3], argv[4], int(argv[5]), float(argv[6]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv)
