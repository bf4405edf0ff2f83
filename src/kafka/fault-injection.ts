import type { KafkaPort } from './ports.ts';

/**
 * Test-only fault: SIGKILLs this process while a transaction's commit (EndTxn) is in flight, with
 * `probability` per commit — the worst moment for exactly-once, when the coordinator may or may
 * not have the commit. `veil stream protect` turns it on only when VEIL_FAULT_KILL_IN_COMMIT is
 * set (the chaos test does); a decorator, so the pipeline has no test branch.
 */
export function killingInCommit(port: KafkaPort, probability: number, random: () => number = Math.random): KafkaPort {
  return {
    consumer: (o) => port.consumer(o),
    committedOffset: (...a) => port.committedOffset(...a),
    maxMessageBytes: (t) => port.maxMessageBytes(t),
    disconnect: () => port.disconnect(),
    async producer(options) {
      const producer = await port.producer(options);
      return {
        ...producer,
        async transaction() {
          const tx = await producer.transaction();
          return {
            ...tx,
            commit() {
              const committing = tx.commit();
              if (random() < probability) setImmediate(() => process.kill(process.pid, 'SIGKILL'));
              return committing;
            },
          };
        },
      };
    },
  };
}
