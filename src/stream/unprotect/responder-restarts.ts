import type { Logger } from 'pino';

/** what ResponderRestarts starts again: a responder's consumer group and its start */
export interface RestartableResponder {
  readonly groupId: string;
  start(): Promise<void>;
}

/**
 * A responder whose consumer stopped for good (kafkajs: a crash it does not restart from, such as
 * no group coordinator while the brokers are away) is started again here, as a pipeline
 * re-creates its consumer: a Kafka outage never needs the process restarted, and /healthz stays
 * green through it. Tries while the process runs, one restart per group at a time, `retryMs`
 * apart (default 5 s).
 */
export class ResponderRestarts {
  private running = false;
  private readonly restarting = new Set<string>();
  private readonly responders: readonly RestartableResponder[];
  private readonly logger: Logger;
  private readonly retryMs: number;

  constructor(responders: readonly RestartableResponder[], logger: Logger, retryMs = 5000) {
    this.responders = responders;
    this.logger = logger;
    this.retryMs = retryMs;
  }

  /** the process runs (its responders started): consumers that stop are restarted */
  set active(running: boolean) {
    this.running = running;
  }

  get active(): boolean {
    return this.running;
  }

  /** the consumer of `groupId` stopped for good: `dead` is disconnected, the responder started again until it runs */
  restart(groupId: string, dead: { disconnect(): Promise<void> }): void {
    const responder = this.responders.find((r) => r.groupId === groupId);
    if (!this.running || !responder || this.restarting.has(groupId)) return;
    this.restarting.add(groupId);
    void this.startAgain(responder, dead).finally(() => this.restarting.delete(groupId));
  }

  private async startAgain(responder: RestartableResponder, dead: { disconnect(): Promise<void> }): Promise<void> {
    await dead.disconnect().catch(() => undefined);
    for (let attempt = 1; this.running; attempt++) {
      try {
        await responder.start();
        this.logger.info({ group: responder.groupId }, 'responder: its consumer is running again');
        return;
      } catch (e) {
        this.logger.warn({ group: responder.groupId, attempt, error: (e as Error).name }, 'responder: its consumer cannot be re-created yet; trying again');
        await new Promise((r) => setTimeout(r, this.retryMs).unref());
      }
    }
  }
}
