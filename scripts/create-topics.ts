// scripts/create-topics.ts NAME... — creates topics (1 partition, RF 1) on $KAFKA_BROKERS; existing ones are left alone.
import { Kafka, logLevel } from 'kafkajs';

const kafka = new Kafka({ clientId: 'veil-create-topics', brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:19092').split(','), logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const existing = new Set(await admin.listTopics());
const wanted = process.argv.slice(2).filter((t) => !existing.has(t));
if (wanted.length)
  await admin.createTopics({ topics: wanted.map((topic) => ({ topic, numPartitions: Number(process.env.PARTITIONS ?? 1) })), waitForLeaders: true });
for (const t of process.argv.slice(2)) console.error(`topic ${t}${existing.has(t) ? ' (existed)' : ''}`);
await admin.disconnect();
