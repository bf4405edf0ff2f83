import { z } from 'zod';

/**
 * The transform request and response bodies of spec §2.1–2.7: field names and nesting are
 * binding. Identifier format and uniqueness (§2.8) are checked by the engine, so that each
 * broken rule gets its own error code and pointer.
 */
export const evidenceSchema = z.strictObject({ name: z.string().min(1).max(256), value: z.string().max(1024) });

const contextSchema = z.strictObject({ guid: z.string(), evidences: z.array(evidenceSchema).max(64) });

export const instanceSchema = z.strictObject({ className: z.string(), propertyName: z.string(), value: z.string() });

export const requestSchema = z.strictObject({
  guid: z.string(),
  rightsContext: z.string(),
  processingContext: z.string(),
  instances: z.array(instanceSchema),
});

export const transformRequestSchema = z.strictObject({
  rightsContexts: z.array(contextSchema),
  processingContexts: z.array(contextSchema),
  requests: z.array(requestSchema),
});

export const transformResponseSchema = z.strictObject({
  responses: z.array(z.strictObject({ request: z.string(), instances: z.array(instanceSchema) })),
});

export type TransformRequest = z.infer<typeof transformRequestSchema>;
export type TransformResponse = z.infer<typeof transformResponseSchema>;
export type Instance = z.infer<typeof instanceSchema>;

/** RFC 4122/9562 textual UUID, any version, case-insensitive. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
