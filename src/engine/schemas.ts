import { z } from 'zod';
import { configSchema } from './config/schema.ts';
import { transformRequestSchema, transformResponseSchema } from './request/schema.ts';

/** JSON Schemas published in schemas/, generated from the zod schemas the engine validates with. */
export function jsonSchemas(): Record<string, unknown> {
  return {
    'config.schema.json': { $id: 'urn:veil:schemas:config', title: 'veil configuration', ...z.toJSONSchema(configSchema, { io: 'input' }) },
    'transform-request.schema.json': { $id: 'urn:veil:schemas:transform-request', title: 'Transform request body (spec §2.1)', ...z.toJSONSchema(transformRequestSchema) },
    'transform-response.schema.json': { $id: 'urn:veil:schemas:transform-response', title: 'Transform response body (spec §2.7)', ...z.toJSONSchema(transformResponseSchema) },
  };
}
