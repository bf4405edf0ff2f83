// The portal's sandbox thread: compiles drafts and runs saved test cases and the sandbox tester,
// so that no draft can hold the serving thread (and /transform) for as long as its work takes.
// The thread's entry module is the wiring's (ConfigPort.sandboxWorker, src/app/portal-sandbox-thread.ts):
// it calls serveSandboxJobs with the whole configuration's compiler, which the portal does not import.
import { parentPort } from 'node:worker_threads';
import type { ConfigCompiler } from './config-port.ts';
import { runJob, type SandboxJob } from './sandbox-jobs.ts';

/** Answers the SandboxRunner's jobs on this worker thread, compiling each job's text with `compile`. */
export function serveSandboxJobs(compile: ConfigCompiler): void {
  parentPort!.on('message', (message: { id: number; job: SandboxJob }) => {
    runJob(message.job, () => new Date(), compile).then(
      (result) => parentPort!.postMessage({ id: message.id, ok: true, result }),
      (e: unknown) =>
        parentPort!.postMessage({ id: message.id, ok: false, error: { name: (e as Error)?.name ?? 'Error', code: (e as { code?: string })?.code } }),
    );
  });
}
