"""The reading half both interop scripts share: a plain confluent_kafka Consumer of a throwaway
group, read_committed, from the beginning of a topic; one JSON line per record, printed as it
arrives. Goes on 2 s after `count` records so that duplicates would show, stops at the timeout."""
import json
import time
import uuid

from confluent_kafka import Consumer


def read_committed(bootstrap, topic, count, timeout_s, describe):
    """describe(msg) -> the dict printed for one record (partition, offset, key added here)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"py-verify-{uuid.uuid4()}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    })
    consumer.subscribe([topic])
    got = 0
    deadline = time.time() + timeout_s
    settle = None
    try:
        while time.time() < deadline and (settle is None or time.time() < settle):
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise SystemExit(f"consumer error: {msg.error()}")
            line = {"partition": msg.partition(), "offset": msg.offset(), "key": msg.key().decode() if msg.key() is not None else None}
            line.update(describe(msg))
            print(json.dumps(line), flush=True)
            got += 1
            if got >= count and settle is None:
                settle = time.time() + 2
    finally:
        consumer.close()
