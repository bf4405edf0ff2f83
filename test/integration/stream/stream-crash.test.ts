import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFailed } from 'vitest';
import { consume, javaConsumeCommitted, steadyProducer, expectKeyOrder } from '../../helpers/kafka.ts';
import { eventually, spawnStream, waitFor } from '../../helpers/processes.ts';
import { streamClients } from '../../helpers/stream-clients.ts';
import { faultBed, groupCaughtUp } from '../../helpers/fault-bed.ts';

const TOTAL = 3000;
const MASTER = 'd'.repeat(64);

/**
 * In the style of Kafka's transactions_test.py: keyed records flow raw → clean while the
 * processor is SIGKILLed three times after real progress, and the broker is paused
 * (SIGSTOP/SIGCONT) and restarted. A read_committed verifier then proves 0 lost, 0 duplicated
 * (by record id) and the order of each key kept.
 */
describe.each(streamClients())('stream on %s: exactly-once under crashes (real broker, real processes)', (client) => {
  const bed = faultBed('crash');

  it('loses nothing, duplicates nothing, keeps per-key order through 3 SIGKILLs, a broker pause and a broker restart', async () => {
    const { broker, kafka, dataDir, configFile, records, started } = bed;
    const env = { KAFKA_BROKERS: broker.brokers, VEIL_MASTER_KEY: MASTER, VEIL_KAFKA_SESSION_TIMEOUT_MS: '6000', VEIL_STREAM_CLIENT: client };
    const args = ['--config', configFile, '--data-dir', dataDir, '--port', '0'];
    const logs: string[] = [];
    const phases: string[] = [];
    const phase = (what: string) => phases.push(`${Date.now()} ${what}`);
    // any failure, the test's timeout included (one run in 20 timed out with no trace): where it was
    onTestFailed(() => {
      console.log(`crash test failed at ${new Set([...records.values()].map((r) => r.id)).size} of ${TOTAL} ids; phases:\n${phases.join('\n')}`);
      console.log(
        [...logs, ...started.map((p) => p.output())]
          .map((l) =>
            l
              .split('\n')
              .filter((line) => /"level":(40|50|60)|re-creating|halted|crashed/.test(line))
              .slice(-40)
              .join('\n'),
          )
          .join('\n----\n'),
      );
    });
    const spawnLogged = () => {
      const p = spawnStream(args, { ...env, VEIL_LOG_LEVEL: 'debug' });
      started.push(p);
      p.stdout!.once('data', () => phase(`pid ${p.pid} first output`));
      p.once('close', () => logs.push(p.output()));
      p.once('exit', (code, signal) => phase(`pid ${p.pid} exited (${signal ?? code})`));
      return p;
    };
    let processor = spawnLogged();
    // records trickle in while the chaos happens: 15 rounds of 200
    const producer = await steadyProducer(kafka);
    const producing = (async () => {
      for (let round = 0; round < 15; round++) {
        const records = Array.from({ length: 200 }, (_, i) => {
          const id = round * 200 + i;
          return { key: `user${id % 97}@example.com`, value: JSON.stringify({ id, email: `user${id % 97}@example.com`, seq: id }) };
        });
        await producer.send('raw.crash', records);
        await new Promise((r) => setTimeout(r, 400));
      }
    })();
    // a failed round fails the test where it is awaited, not as an unhandled rejection
    producing.catch(() => undefined);
    const unique = () => new Set([...records.values()].map((s) => s.id)).size;
    const progress = async (beyond: number, what: string) => {
      phase(`waiting for ${what}`);
      await waitFor(() => unique() > beyond, 120_000, what);
    };

    for (let kill = 1; kill <= 3; kill++) {
      await progress(kill * 400, `progress before kill ${kill}`);
      phase(`kill ${kill} pid ${processor.pid}`);
      processor.kill('SIGKILL');
      await new Promise((r) => processor.once('exit', r));
      if (kill === 2) {
        // pause the broker a while, then let it go on
        const pid = await broker.pid();
        phase('broker SIGSTOP');
        process.kill(pid, 'SIGSTOP');
        // the fault itself: how long the broker stays stopped
        await new Promise((r) => setTimeout(r, 4000));
        process.kill(pid, 'SIGCONT');
      }
      processor = spawnLogged();
      phase(`spawned pid ${processor.pid}`);
    }
    await progress(1600, 'progress before the broker restart');
    phase('broker restart');
    await broker.restart();
    phase('broker restarted');
    await producing;
    await producer.close();
    // this test's kafkajs verifier was seen to stop reading after the broker restart (1 run in 40,
    // stalled at 1,612 ids while Java read_committed saw all 3,000): when it makes no progress
    // for 20 s, the reference reader (Java read_committed) is asked whether the topic is complete
    let [seen, movedAt, askedAt, javaComplete] = [0, Date.now(), 0, false];
    const complete = async () => {
      if (unique() >= TOTAL || javaComplete) return true;
      if (unique() !== seen) [seen, movedAt] = [unique(), Date.now()];
      if (Date.now() - movedAt < 20_000 || Date.now() - askedAt < 20_000) return false;
      askedAt = Date.now();
      const ids = await javaConsumeCommitted('clean.crash', broker.brokers).then(
        (rs) => new Set(rs.map((r) => JSON.parse(r.value).id)).size,
        () => 0,
      );
      javaComplete = ids >= TOTAL;
      if (javaComplete) console.log(`crash test: the kafkajs verifier stopped at ${unique()} ids; Java read_committed sees ${ids} of ${TOTAL}`);
      return javaComplete;
    };
    try {
      await waitFor(complete, 240_000, 'all records in the clean topic');
    } catch (e) {
      // a stall: what the processes did (veil logs codes, offsets and ids, never values)
      console.log(`crash test stalled at ${unique()} of ${TOTAL} ids\n${phases.join('\n')}`);
      // which side stalled: the processor, or this test's kafkajs verifier (Java is the reference)
      const javaIds = await javaConsumeCommitted('clean.crash', broker.brokers).then(
        (rs) => new Set(rs.map((r) => JSON.parse(r.value).id)).size,
        (err: Error) => `unreadable (${err.message})`,
      );
      const full = join(tmpdir(), `veil-crash-stall-${Date.now()}.log`);
      await writeFile(full, [...logs, processor.output()].join('\n----\n'));
      console.log(`Java read_committed sees ${javaIds} of ${TOTAL} ids; the processes' whole logs: ${full}`);
      console.log(
        [...logs, processor.output()]
          .map((l) =>
            l
              .split('\n')
              .filter((line) => /"level":(40|50|60)|re-creating|halted|crashed/.test(line))
              .slice(-60)
              .join('\n'),
          )
          .join('\n----\n'),
      );
      throw e;
    }
    // the group committed every raw record: nothing is left for the processor to write before it stops
    phase('waiting for the group to commit the end of raw.crash');
    // (asked through a broker that may still be loading the group after its restart: an error is a "not yet")
    await eventually(
      'the group to commit every raw record',
      async () => ((await groupCaughtUp(kafka, 'veil-protect-crash', 'raw.crash')) ? true : undefined),
      120_000,
    );
    processor.kill('SIGTERM');
    await new Promise((r) => processor.once('close', r));

    // the input itself is exact (the producer's retries through the broker restart wrote nothing twice)
    const rawRecords = await consume(kafka, 'raw.crash', TOTAL, 60_000, 1000);
    const raw = rawRecords.map((r) => JSON.parse(r.value!.toString()).id as number);
    expect({ raw: raw.length, unique: new Set(raw).size }).toEqual({ raw: TOTAL, unique: TOTAL });
    // Verified with Kafka's own Java client, read_committed: kafkajs' consumer was seen to deliver
    // records of aborted transactions (a zombie's last transaction, aborted by the next owner's
    // fence) — a reader bug, not a second write; its view is reported beside the reference
    const java = (await javaConsumeCommitted('clean.crash', broker.brokers)).map((r) => ({
      ...r,
      record: JSON.parse(r.value) as { id: number; email: string },
    }));
    const ids = java.map((r) => r.record.id);
    const lost = TOTAL - new Set(ids).size;
    const duplicated = ids.length - new Set(ids).size;
    const kafkajsIds = bed.inTopicOrder().map((r) => r.id);
    console.log(
      `crash test: Java read_committed ${ids.length} records, ${duplicated} duplicated, ${lost} lost; kafkajs read_committed ${kafkajsIds.length} records, ${kafkajsIds.length - new Set(kafkajsIds).size} of them repeated ids`,
    );
    if (lost || duplicated) {
      console.log(phases.join('\n'));
      console.log(
        logs
          .map((l) =>
            l
              .split('\n')
              .filter((line) => !/ECONNREFUSED|seed broker|concurrent operation|group coordinator is not|correct coordinator/.test(line))
              .join('\n'),
          )
          .join('\n----\n'),
      );
    }
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    // one key (its deterministic protected email), one clean partition, ids in production order
    expect(expectKeyOrder(java)).toBe(97);
  }, 600_000);
});
