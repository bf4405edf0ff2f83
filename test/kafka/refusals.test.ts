import { describe, expect, it } from 'vitest';
import { installKafkaDenied, KAFKA_DENIED_EXIT_CODE } from '../../src/cli/last-resort.ts';
import { KafkaError, reportDenied, whenKafkaDenied } from '../../src/kafka/index.ts';
import { reportingDenied } from '../../src/kafka/denied-port.ts';
import { deniedBy, fromKafkajs } from '../../src/kafka/kafkajs-errors.ts';
import { fromLibrdkafka, refusalInLog } from '../../src/kafka/librdkafka-errors.ts';
import { FakeKafka } from '../stream/fake-kafka.ts';

const kafkajsError = (name: string, fields: Record<string, unknown> = {}) => Object.assign(new Error(String(fields.message ?? name)), { name, ...fields });

describe('what a refusal of this client looks like, on each client', () => {
  it('kafkajs: SASL failures, authorization errors, TLS certificate errors — also wrapped in retries exhausted; not a connection refused', () => {
    expect(deniedBy(kafkajsError('KafkaJSSASLAuthenticationError', { message: 'SASL SCRAM SHA512 authentication failed' }))).toMatchObject({
      code: 'AUTHENTICATION_FAILED',
    });
    expect(deniedBy(kafkajsError('KafkaJSProtocolError', { type: 'GROUP_AUTHORIZATION_FAILED' }))).toMatchObject({ code: 'GROUP_AUTHORIZATION_FAILED' });
    const tls = kafkajsError('KafkaJSConnectionError', { code: 'ERR_SSL_SSL/TLS_ALERT_CERTIFICATE_UNKNOWN' });
    expect(deniedBy(kafkajsError('KafkaJSNumberOfRetriesExceeded', { cause: tls }))).toMatchObject({ code: 'TLS_CERTIFICATE_REFUSED' });
    for (const code of ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID', 'DEPTH_ZERO_SELF_SIGNED_CERT'])
      expect(deniedBy(kafkajsError('KafkaJSConnectionError', { code }))).toBeDefined();
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT']) expect(deniedBy(kafkajsError('KafkaJSConnectionError', { code }))).toBeUndefined();
    expect(deniedBy(kafkajsError('KafkaJSProtocolError', { type: 'NOT_LEADER_OR_FOLLOWER', retriable: true }))).toBeUndefined();
    const wrapped = fromKafkajs(kafkajsError('KafkaJSProtocolError', { type: 'TOPIC_AUTHORIZATION_FAILED', retriable: false }), 'subscribe') as KafkaError;
    expect(wrapped).toMatchObject({ code: 'TOPIC_AUTHORIZATION_FAILED', denied: true, retriable: false });
  });

  it("librdkafka: the error events' codeless words, the FAIL lines' reasons, the protocol's codes", () => {
    expect(fromLibrdkafka(Object.assign(new Error('authentication failure'), { code: -1 }), 'consumer error')).toMatchObject({
      code: 'AUTHENTICATION_FAILED',
      denied: true,
    });
    expect(fromLibrdkafka(Object.assign(new Error('all broker connections are down'), { code: -1 }), 'consumer error')).toMatchObject({ denied: false });
    expect(fromLibrdkafka(Object.assign(new Error('Broker: Group authorization failed'), { code: 30 }), 'consumer error')).toMatchObject({
      code: 'GROUP_AUTHORIZATION_FAILED',
      denied: true,
      retriable: false,
    });
    expect(fromLibrdkafka(Object.assign(new Error('Broker: Transactional Id authorization failed'), { code: 53 }), 'init')).toMatchObject({ denied: true });
    expect(
      refusalInLog(
        3,
        '[thrd:sasl_ssl://b:9093/bootstrap]: sasl_ssl://b:9093/bootstrap: SASL authentication error: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 308ms in state AUTH_REQ)',
      ),
    ).toMatchObject({ code: 'AUTHENTICATION_FAILED', message: expect.stringMatching(/^sasl_ssl:\/\/b:9093\/bootstrap: SASL authentication error/) });
    expect(
      refusalInLog(
        3,
        'ssl://b:9093/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: broker certificate could not be verified',
      ),
    ).toMatchObject({ code: 'TLS_CERTIFICATE_REFUSED' });
    expect(
      refusalInLog(3, 'ssl://b:9093/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls alert bad certificate: SSL alert number 42'),
    ).toMatchObject({ code: 'TLS_CERTIFICATE_REFUSED' });
    expect(refusalInLog(3, 'b:9092/bootstrap: Connect to ipv4#127.0.0.1:9092 failed: Connection refused')).toBeUndefined();
    expect(refusalInLog(6, 'SASL authentication error: something')).toBeUndefined();
  });
});

describe("the process's refusal listeners and the port decorator", () => {
  it('reportDenied tells the listeners of a refusal only; a registration can be taken back', () => {
    const told: string[] = [];
    const stop = whenKafkaDenied((e) => told.push(e.code));
    reportDenied(new KafkaError('TIMED_OUT', 'x', true));
    reportDenied(new KafkaError('AUTHENTICATION_FAILED', 'x', false, { denied: true }));
    stop();
    reportDenied(new KafkaError('AUTHENTICATION_FAILED', 'x', false, { denied: true }));
    expect(told).toEqual(['AUTHENTICATION_FAILED']);
  });

  it('reportingDenied: a refusal a call meets, or a consumer crashes on, is told before it is thrown on', async () => {
    const told: unknown[] = [];
    const fake = new FakeKafka();
    const denied = new KafkaError('TRANSACTIONAL_ID_AUTHORIZATION_FAILED', 'init', false, { denied: true });
    fake.producer = async () => {
      throw denied;
    };
    const port = reportingDenied(fake, (e) => told.push(e));
    await expect(port.producer({ transactionalId: 't' })).rejects.toBe(denied);
    const crashes: Error[] = [];
    const consumer = port.consumer({ groupId: 'g', readCommitted: true });
    consumer.on({ crashed: (e) => crashes.push(e) });
    fake.events.crashed!(denied, false);
    expect(told).toEqual([denied, denied]);
    expect(crashes).toEqual([denied]);
  });

  it('the command line: one JSON line (secrets scrubbed), then exit 77, once', () => {
    const lines: string[] = [];
    const exits: number[] = [];
    installKafkaDenied(
      (l) => lines.push(l),
      (t) => t.replaceAll('pw123', '[redacted]'),
      (c) => exits.push(c),
    );
    reportDenied(new KafkaError('AUTHENTICATION_FAILED', 'SASL failed for pw123', false, { denied: true }));
    reportDenied(new KafkaError('AUTHENTICATION_FAILED', 'again', false, { denied: true }));
    expect(exits).toEqual([KAFKA_DENIED_EXIT_CODE]);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 60,
      code: 'KAFKA_ACCESS_DENIED',
      kafkaCode: 'AUTHENTICATION_FAILED',
      reason: 'SASL failed for [redacted]',
    });
  });
});
