// The admin portal's sandbox thread (src/portal/sandbox-runner.ts starts it from ConfigPort.sandboxWorker):
// the portal's jobs (src/portal/sandbox-worker.ts) with the whole configuration's compiler, which
// the portal does not import. Functions do not cross threads, so the wiring names this entry.
import { serveSandboxJobs } from '../portal/sandbox-worker.ts';
import { compileVeilConfigText } from './config-file.ts';

serveSandboxJobs(compileVeilConfigText);
