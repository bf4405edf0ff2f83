"""The writing half the interop scripts share: a plain, idempotent confluent_kafka Producer that
writes records and waits until every one is delivered."""
from confluent_kafka import Producer


def produce_all(bootstrap, topic, records):
    """records: (key, value, headers) triples, values in the Confluent framing, made as they are
    written. Returns the schema id in the last value's framing."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    schema_id = None
    for key, value, headers in records:
        schema_id = int.from_bytes(value[1:5], "big")
        producer.produce(topic, key=key, value=value, headers=headers)
        producer.poll(0)
    left = producer.flush(30)
    if left:
        raise SystemExit(f"{left} records not delivered")
    return schema_id
