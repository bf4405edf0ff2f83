import { randomUUID } from 'node:crypto';
import type { Plan } from '../engine/index.ts';
import type { AuditEvent } from './audit-sink.ts';

export interface AuditCaller {
  clientId: string;
  subject: string;
  issuer: string;
}

/**
 * The audit record of one transform call, over HTTP or Kafka: counts per configured field and
 * action from the plan; before planning (a refusal) only the number of instances, because the
 * names are then unverified caller input. Never a value.
 */
export function auditEvent(options: {
  requestId: string;
  channel: AuditEvent['channel'];
  now: Date;
  caller?: AuditCaller;
  plan?: Plan;
  outcome: AuditEvent['outcome'];
  code?: string;
  body?: unknown;
}): AuditEvent {
  const { plan, caller } = options;
  const fields = plan ? fieldCounts(plan) : [];
  let instances = fields.reduce((n, f) => n + f.count, 0);
  if (!plan) {
    const requests = (options.body as { requests?: unknown })?.requests;
    if (Array.isArray(requests))
      for (const r of requests) instances += Array.isArray((r as { instances?: unknown })?.instances) ? (r as { instances: unknown[] }).instances.length : 0;
  }
  return {
    eventId: randomUUID(),
    time: options.now.toISOString(),
    requestId: options.requestId,
    channel: options.channel,
    ...(caller ? { client: caller.clientId, subject: caller.subject, issuer: caller.issuer } : {}),
    outcome: options.outcome,
    ...(options.code ? { code: options.code } : {}),
    instances,
    fields,
  };
}

/** How many values of each configured field a planned call transforms, per action. */
export function fieldCounts(plan: Plan): AuditEvent['fields'] {
  const counts = new Map<string, AuditEvent['fields'][number]>();
  for (const r of plan.requests) {
    // a batch mostly repeats a field many times in a row: count a run without a lookup per value
    let last: AuditEvent['fields'][number] | undefined;
    for (const i of r.instances) {
      if (last && last.className === i.className && last.propertyName === i.propertyName) {
        last.count++;
        continue;
      }
      const key = `${i.className}\0${i.propertyName}\0${r.action}`;
      last = counts.get(key);
      if (!last) counts.set(key, (last = { className: i.className, propertyName: i.propertyName, action: r.action, count: 0 }));
      last.count++;
    }
  }
  return [...counts.values()];
}
