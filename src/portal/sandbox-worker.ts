// The portal's sandbox thread: compiles drafts and runs saved test cases and the sandbox tester,
// so that no draft can hold the serving thread (and /transform) for as long as its work takes.
import { parentPort } from 'node:worker_threads';
import { runJob, type SandboxJob } from './sandbox-jobs.ts';

parentPort!.on('message', (message: { id: number; job: SandboxJob }) => {
  runJob(message.job, () => new Date()).then(
    (result) => parentPort!.postMessage({ id: message.id, ok: true, result }),
    (e: unknown) => parentPort!.postMessage({ id: message.id, ok: false, error: { name: (e as Error)?.name ?? 'Error', code: (e as { code?: string })?.code } }),
  );
});
