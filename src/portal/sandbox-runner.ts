import { Worker } from 'node:worker_threads';
import { VeilError } from '../engine/index.ts';
import type { SandboxJob, SandboxResult } from './sandbox-jobs.ts';
import { PortalError } from './errors.ts';

interface Pending {
  id: number;
  job: SandboxJob;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Runs sandbox jobs on one worker thread, one at a time, each within `timeoutMs`: a job that takes
 * longer is stopped by terminating the thread (a new one starts for the next job) and fails with
 * SANDBOX_BUSY, as does a job that finds `maxQueue` jobs waiting. The serving thread only posts
 * the job and waits, so /transform keeps its latency whatever a draft asks for.
 */
export class SandboxRunner {
  private worker: Worker | undefined;
  private readonly queue: Pending[] = [];
  private running: (Pending & { timer: NodeJS.Timeout }) | undefined;
  private nextId = 1;
  private closed = false;
  private readonly timeoutMs: number;
  private readonly maxQueue: number;
  private readonly workerUrl: URL;

  /** `workerUrl`: the thread's entry module, which calls serveSandboxJobs (sandbox-worker.ts; ConfigPort.sandboxWorker) */
  constructor(options: { timeoutMs: number; maxQueue?: number; workerUrl: URL }) {
    this.timeoutMs = options.timeoutMs;
    this.maxQueue = options.maxQueue ?? 16;
    this.workerUrl = options.workerUrl;
  }

  run<J extends SandboxJob>(job: J): Promise<SandboxResult<J>> {
    if (this.closed) return Promise.reject(new PortalError('SANDBOX_BUSY', 'the portal sandbox is stopping'));
    if (this.queue.length >= this.maxQueue)
      return Promise.reject(new PortalError('SANDBOX_BUSY', `the portal sandbox has ${this.queue.length} runs waiting; try again shortly`));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, job, resolve: resolve as (v: unknown) => void, reject });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new PortalError('SANDBOX_BUSY', 'the portal sandbox is stopping'));
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private pump(): void {
    if (this.running || !this.queue.length) return;
    const next = this.queue.shift()!;
    const worker = this.ensureWorker();
    const timer = setTimeout(
      () => this.fail(new PortalError('SANDBOX_BUSY', `the sandbox run took longer than ${this.timeoutMs} ms and was stopped`), true),
      this.timeoutMs,
    );
    this.running = { ...next, timer };
    worker.postMessage({ id: next.id, job: next.job });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.workerUrl, { resourceLimits: { maxOldGenerationSizeMb: 256 } });
    worker.unref();
    worker.on('message', (m: { id: number; ok: boolean; result?: unknown; error?: { name: string; code?: string } }) => {
      const current = this.running;
      if (!current || current.id !== m.id) return;
      clearTimeout(current.timer);
      this.running = undefined;
      if (m.ok) current.resolve(m.result);
      else current.reject(new PortalError('SANDBOX_BUSY', `the sandbox run failed (${m.error?.code ?? m.error?.name ?? 'error'})`));
      this.pump();
    });
    worker.on('error', () => {
      if (this.worker === worker) this.worker = undefined;
      this.fail(new PortalError('SANDBOX_BUSY', 'the sandbox thread stopped'), false);
    });
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      if (this.running) this.fail(new PortalError('SANDBOX_BUSY', 'the sandbox thread stopped'), false);
    });
    this.worker = worker;
    return worker;
  }

  private fail(error: VeilError, terminate: boolean): void {
    const current = this.running;
    if (current) {
      clearTimeout(current.timer);
      this.running = undefined;
      current.reject(error);
    }
    if (terminate && this.worker) {
      const worker = this.worker;
      this.worker = undefined;
      void worker.terminate();
    }
    if (!this.closed) this.pump();
  }
}
