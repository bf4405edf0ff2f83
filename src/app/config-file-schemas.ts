import { z } from 'zod';
import { jsonSchemas as engineJsonSchemas } from '../engine/index.ts';
import { veilConfigSchema } from './config-file.ts';

/** The JSON Schemas published in schemas/: the configuration file's, and the transform request and response bodies'. */
export function jsonSchemas(): Record<string, unknown> {
  return {
    'config.schema.json': { $id: 'urn:veil:schemas:config', title: 'veil configuration', ...z.toJSONSchema(veilConfigSchema, { io: 'input' }) },
    ...engineJsonSchemas(),
  };
}
