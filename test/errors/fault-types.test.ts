import { describe, expect, it } from 'vitest';
import { layerFaultType, VeilError } from '../../src/engine/index.ts';
import { ERROR_CATALOG } from '../../src/errors/catalog.ts';
import { CLI_FAULTS } from '../../src/cli/errors.ts';
import { DB_FAULTS } from '../../src/db/errors.ts';
import { DISCOVER_FAULTS } from '../../src/discover/errors.ts';
import { GATEWAY_FAULTS, GatewayFault } from '../../src/gateway/errors.ts';
import { KafkaError } from '../../src/kafka/kafka-error.ts';
import { JSON_BYTES_FAULTS } from '../../src/json-bytes/errors.ts';
import { PORTAL_FAULTS } from '../../src/portal/errors.ts';

/** every layer's table of fault codes (src/<layer>/errors.ts) */
const FAULT_TABLES: Record<string, Readonly<Record<string, { retriable: boolean }>>> = {
  gateway: GATEWAY_FAULTS,
  discover: DISCOVER_FAULTS,
  cli: CLI_FAULTS,
  db: DB_FAULTS,
  portal: PORTAL_FAULTS,
  'json-bytes': JSON_BYTES_FAULTS,
};

describe("fault types: a layer's internal faults, made by layerFaultType, never a VeilError", () => {
  it('takes code and retriable from its table, keeps the cause, is named after its class, and no door renders it', () => {
    const cause = new Error('below');
    const fault = new GatewayFault('POOLED_CONNECTION_RESET', 'm', { cause });
    expect(fault).toBeInstanceOf(Error);
    expect(fault).not.toBeInstanceOf(VeilError);
    expect([fault.code, fault.retriable, fault.cause, fault.name, fault.message]).toEqual(['POOLED_CONNECTION_RESET', true, cause, 'GatewayFault', 'm']);
    expect(new GatewayFault('BODY_OVER_LIMIT', 'm').retriable).toBe(false);
    expect(Object.hasOwn(new GatewayFault('BODY_OVER_LIMIT', 'm'), 'cause')).toBe(false);
  });

  it('without a table, codes are open-ended: a fault says whether it is retriable, else it is not (fail closed)', () => {
    class OpenFault extends layerFaultType() {}
    expect(new OpenFault('ANY_CLIENT_CODE', 'm', { retriable: true }).retriable).toBe(true);
    expect(new OpenFault('ANY_CLIENT_CODE', 'm').retriable).toBe(false);
  });

  it("KafkaError is src/kafka's fault type: open-ended client codes, with its own fields", () => {
    const cause = new Error('below');
    const e = new KafkaError('TIMED_OUT', 'm', true, { cause, fatal: true, brokerCode: 7, denied: true });
    expect(e).not.toBeInstanceOf(VeilError);
    expect([e.code, e.retriable, e.fatal, e.brokerCode, e.denied, e.cause, e.name]).toEqual(['TIMED_OUT', true, true, 7, true, cause, 'KafkaError']);
    const plain = new KafkaError('STATE', 'm', false);
    expect([plain.retriable, plain.fatal, plain.denied, plain.brokerCode, Object.hasOwn(plain, 'cause')]).toEqual([false, false, false, undefined, false]);
  });

  it("no fault code is a wire code: a fault that escaped would not be answered as one of the catalog's", () => {
    for (const [layer, table] of Object.entries(FAULT_TABLES)) {
      for (const code of Object.keys(table)) expect(Object.hasOwn(ERROR_CATALOG, code), `${layer}: ${code}`).toBe(false);
    }
  });
});
