import { eventually } from './processes.ts';

export interface LeaseProbe {
  /** produces the probe record with this id */
  send(id: number): Promise<void>;
  /** the pipeline's records read and committed so far (veil_stream_records_in_total) */
  committed(): Promise<number>;
  /** the batches it aborted so far (veil_stream_batch_retries_total, or its log lines) */
  aborted(): Promise<number>;
  /** the first probe's id; the next ones count up from it */
  firstId: number;
}

/**
 * With the KMS stopped, probes a protect pipeline until one of its protection threads refuses a
 * record. Each thread holds its own lease of the keys, renewed on its own clock, so it may go on
 * protecting for up to a lease's lifetime after /healthz (the process's own lease) turned red.
 * Each probe is produced, then waited on until the pipeline committed it (its thread's lease still
 * ran) or aborted a batch (it lapsed: a thread refuses until the KMS answers again). The probes
 * that passed are in the clean topic; the refused one, and all behind it, will be once it answers.
 */
export async function probeUntilRefused(probe: LeaseProbe, timeoutMs = 60_000): Promise<{ passed: number[]; refused: number }> {
  const passed: number[] = [];
  for (const deadline = Date.now() + timeoutMs; ;) {
    const id = probe.firstId + passed.length;
    const [committed, aborted] = [await probe.committed(), await probe.aborted()];
    await probe.send(id);
    const outcome = await eventually(
      `probe ${id} committed or refused`,
      async () => {
        if ((await probe.aborted()) > aborted) return 'refused';
        return (await probe.committed()) > committed ? 'passed' : undefined;
      },
      30_000,
    );
    if (outcome === 'refused') return { passed, refused: id };
    passed.push(id);
    if (Date.now() > deadline) throw new Error(`no protection thread refused a record within ${timeoutMs} ms (${passed.length} probes passed)`);
  }
}
