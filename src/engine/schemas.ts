import { z } from 'zod';
import { transformRequestSchema, transformResponseSchema } from './request/schema.ts';

/** JSON Schemas of the transform request and response bodies, generated from the zod schemas the engine validates with. */
export function jsonSchemas(): Record<string, unknown> {
  return {
    'transform-request.schema.json': {
      $id: 'urn:veil:schemas:transform-request',
      title: 'Transform request body (spec §2.1)',
      ...z.toJSONSchema(transformRequestSchema),
    },
    'transform-response.schema.json': {
      $id: 'urn:veil:schemas:transform-response',
      title: 'Transform response body (spec §2.7)',
      ...z.toJSONSchema(transformResponseSchema),
    },
  };
}
