"""Protobuf interop with confluent-kafka's own serializers (test/integration/stream/stream-protobuf.test.ts).

  produce BOOTSTRAP REGISTRY_URL TOPIC PROTO_FILE MESSAGE FIRST COUNT [UNKNOWN_EVERY]
      compiles PROTO_FILE with protoc (grpcio-tools) and writes COUNT customer records with ids
      FIRST.. with ProtobufSerializer (auto-registering the schema under TOPIC-value, as a
      serialized FileDescriptorProto), keyed by their email. Every UNKNOWN_EVERY-th record gets a
      field the schema does not know (number 99, varint 42) appended, as a newer writer would.
      Prints a JSON line per record (id, the value's bytes in hex), then the schema id it used.
  consume BOOTSTRAP REGISTRY_URL TOPIC MESSAGE COUNT TIMEOUT_S
      a plain Consumer (read_committed) reads TOPIC from the beginning. Each value's schema is
      fetched from the registry by the id it carries and turned into a message class (a
      FileDescriptorProto as Python registers, or .proto text compiled with protoc);
      ProtobufDeserializer decodes it. Prints one JSON line per record: partition, offset, key,
      schema id, the decoded message (field names as in the schema, 64-bit integers as strings),
      the varint unknown fields the message kept ([number, value]), and the value's bytes in hex. Goes on a while after COUNT
      records so that duplicates would show.
"""
import base64
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import uuid

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.json_format import MessageToDict
from google.protobuf.unknown_fields import UnknownFieldSet

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from committed_reader import read_committed  # noqa: E402
from plain_producer import produce_all  # noqa: E402

UNKNOWN_FIELD = b"\x98\x06\x2a"  # field 99, varint 42


def compile_proto(path):
    """The _pb2 module protoc generates for PROTO_FILE."""
    out = tempfile.mkdtemp(prefix="veil-pb2-")
    directory, name = os.path.split(os.path.abspath(path))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{directory}", f"--python_out={out}", name], check=True)
    sys.path.insert(0, out)
    return importlib.import_module(name[:-len(".proto")] + "_pb2")


def customer(module, message, i):
    cls = getattr(module, message)
    m = cls(id=i, email=f"pb{i}@example.com")
    card = m.cards.add()
    card.number = 4111111111110000 + i
    card.brand = "visa"
    if i % 5 != 0:
        m.profile.name = f"Pb Person {i}"
        m.profile.tier = i % 3
    if hasattr(m, "phone"):
        m.phone = f"+4420{i:07d}"
    return m


def produce(bootstrap, registry_url, topic, proto_file, message, first, count, unknown_every=0):
    module = compile_proto(proto_file)
    registry = SchemaRegistryClient({"url": registry_url})
    serializer = ProtobufSerializer(getattr(module, message), registry, {"use.deprecated.format": False, "auto.register.schemas": True})
    ctx = SerializationContext(topic, MessageField.VALUE)

    def records():
        for i in range(first, first + count):
            m = customer(module, message, i)
            value = serializer(m, ctx)
            if unknown_every and i % unknown_every == 0:
                value += UNKNOWN_FIELD
            print(json.dumps({"id": i, "bytes": value.hex()}))
            yield m.email.encode(), value, None

    print(json.dumps({"schema_id": produce_all(bootstrap, topic, records())}))


class Classes:
    """Message classes by schema id, built from what the registry holds."""

    def __init__(self, registry, message):
        self.registry = registry
        self.message = message
        self.by_id = {}

    def get(self, schema_id):
        if schema_id not in self.by_id:
            text = self.registry.get_schema(schema_id).schema_str
            self.by_id[schema_id] = self.from_descriptor(text) if re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", text.strip()) else self.from_text(text)
        return self.by_id[schema_id]

    def from_descriptor(self, text):
        fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text))
        fd.name = f"veil_clean_{uuid.uuid4().hex}.proto"  # each clean version in a pool of its own
        pool = descriptor_pool.DescriptorPool()
        pool.Add(fd)
        full = f"{fd.package}.{self.message}" if fd.package else self.message
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(full))

    def from_text(self, text):
        directory = tempfile.mkdtemp(prefix="veil-clean-")
        name = f"veil_clean_{uuid.uuid4().hex}.proto"
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
        return getattr(compile_proto(os.path.join(directory, name)), self.message)


def consume(bootstrap, registry_url, topic, message, count, timeout_s):
    registry = SchemaRegistryClient({"url": registry_url})
    classes = Classes(registry, message)
    deserializers = {}

    def describe(msg):
        schema_id = int.from_bytes(msg.value()[1:5], "big")
        if schema_id not in deserializers:
            deserializers[schema_id] = ProtobufDeserializer(classes.get(schema_id), {"use.deprecated.format": False})
        value = deserializers[schema_id](msg.value(), SerializationContext(topic, MessageField.VALUE))
        return {
            "schema_id": schema_id,
            "value": MessageToDict(value, preserving_proto_field_name=True),
            "unknown": [[u.field_number, u.data] for u in UnknownFieldSet(value) if isinstance(u.data, int)],
            "bytes": msg.value().hex(),
        }

    read_committed(bootstrap, topic, count, timeout_s, describe)


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "produce":
        produce(args[0], args[1], args[2], args[3], args[4], int(args[5]), int(args[6]), int(args[7]) if len(args) > 7 else 0)
    elif mode == "consume":
        consume(args[0], args[1], args[2], args[3], int(args[4]), float(args[5]))
    else:
        raise SystemExit(f"unknown mode {mode}")
