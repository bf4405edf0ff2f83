import { whenKafkaDenied } from '../kafka/index.ts';
/**
 * What a process does with a failure nothing else caught: a rejected promise no one awaited or
 * an exception thrown from a callback (Kafka clients throw from their own timers and sockets).
 * It never prints a client's stack trace or a value: one JSON line with a stable code and the
 * error's name and code — not its message, which can quote input (JSON.parse does) — then exit
 * 70 (EX_SOFTWARE), so an
 * orchestrator restarts the process — exactly-once processing holds across the restart (the new
 * process fences and re-reads the committed offsets).
 */
export const UNHANDLED_EXIT_CODE = 70;

export function describeFailure(reason: unknown): Record<string, string> {
  const e = reason instanceof Error ? reason : undefined;
  const out: Record<string, string> = { error: e?.name ?? typeof reason };
  const code = (e as { code?: unknown } | undefined)?.code ?? (e as { type?: unknown } | undefined)?.type;
  if (typeof code === 'string' || typeof code === 'number') out.errorCode = String(code);
  return out;
}

export function installLastResort(write: (line: string) => void, exit: (code: number) => void = (c) => process.exit(c)): void {
  let exiting = false;
  const fail = (origin: string) => (reason: unknown) => {
    if (exiting) return;
    exiting = true;
    write(
      `${JSON.stringify({ level: 60, time: Date.now(), service: 'veil', code: 'UNHANDLED_FAILURE', origin, ...describeFailure(reason), msg: 'unexpected failure; exiting so that the process is restarted' })}\n`,
    );
    exit(UNHANDLED_EXIT_CODE);
  };
  process.on('unhandledRejection', fail('unhandledRejection'));
  process.on('uncaughtException', fail('uncaughtException'));
}

/**
 * What a process does when Kafka refuses it for good — a wrong password, an untrusted, expired or
 * refused certificate, a missing ACL (a KafkaError `denied`, src/kafka/denied.ts): no retry fixes
 * that, and both clients would otherwise retry in the background for ever while health stays
 * red. One JSON line with the refusal's code, the cluster and the client's own reason (brokers,
 * mechanism, ACL operation; never a credential: `scrub` takes out any secret of the settings that
 * a reason might quote), then exit 77 (EX_NOPERM), within the 60 s the issue asks for.
 */
export const KAFKA_DENIED_EXIT_CODE = 77;

export function installKafkaDenied(
  write: (line: string) => void,
  scrub: (text: string) => string,
  exit: (code: number) => void = (c) => process.exit(c),
): void {
  let exiting = false;
  whenKafkaDenied((error) => {
    if (exiting) return;
    exiting = true;
    write(
      `${JSON.stringify({ level: 60, time: Date.now(), service: 'veil', code: 'KAFKA_ACCESS_DENIED', kafkaCode: error.code, reason: scrub(error.message), msg: "Kafka refused this process's credentials, certificate or permissions; exiting (docs/kafka-security.md)" })}\n`,
    );
    exit(KAFKA_DENIED_EXIT_CODE);
  });
}
