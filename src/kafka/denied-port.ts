import { reportDenied } from './denied.ts';
import type { ConsumerPort, KafkaPort, ProducerPort, Transaction } from './ports.ts';

type OnDenied = (error: unknown) => void;

/** Passes `e` on, after telling `onDenied` of it (which acts on refusals only). */
function tell(onDenied: OnDenied) {
  return (e: unknown): never => {
    onDenied(e);
    throw e;
  };
}

/** The methods of `target` that return promises, each telling `onDenied` of a refusal before it rejects. */
function wrapCalls<T extends object>(target: T, onDenied: OnDenied, wrapResult: Partial<Record<keyof T, (value: never) => unknown>> = {}): T {
  const report = tell(onDenied);
  return new Proxy(target, {
    get(t, key, receiver) {
      const value = Reflect.get(t, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const out = (value as (...a: unknown[]) => unknown).apply(t, args);
        if (!(out instanceof Promise)) return out;
        const then = wrapResult[key as keyof T];
        return out.then((v: unknown) => (then ? then(v as never) : v), report);
      };
    },
  });
}

/**
 * A KafkaPort decorator: every refusal of this client's credentials, certificate or permissions
 * (KafkaError `denied`) that a call meets — a connect, a send, a commit, an offset read — or that
 * a consumer reports as its crash reaches `onDenied` (default: the process's listeners, denied.ts),
 * whichever adapter runs. Background refusals
 * a client meets between calls (librdkafka's error events) the adapters report themselves.
 */
export function reportingDenied(port: KafkaPort, onDenied: OnDenied = reportDenied): KafkaPort {
  const transaction = (t: Transaction) => wrapCalls(t, onDenied);
  const producer = (p: ProducerPort) => wrapCalls(p, onDenied, { transaction });
  const consumer = (c: ConsumerPort): ConsumerPort => {
    const wrapped = wrapCalls(c, onDenied);
    return Object.assign(Object.create(wrapped) as ConsumerPort, {
      on(events: Parameters<ConsumerPort['on']>[0]) {
        c.on({
          ...events,
          crashed(error: Error, restarting: boolean) {
            onDenied(error);
            events.crashed?.(error, restarting);
          },
        });
      },
    });
  };
  return {
    consumer: (options) => consumer(port.consumer(options)),
    producer: (options) => port.producer(options).then(producer, tell(onDenied)),
    committedOffset: (...args) => port.committedOffset(...args).catch(tell(onDenied)),
    maxMessageBytes: (topic) => port.maxMessageBytes(topic).catch(tell(onDenied)),
    disconnect: () => port.disconnect(),
  };
}
