import { ENGINE_ERRORS, type ErrorEntry } from '../engine/index.ts';
import {
  AUDIT_ERRORS,
  CONTROL_ERRORS,
  DB_ERRORS,
  DOOR_ERRORS,
  GATEWAY_ERRORS,
  IDENTITY_ERRORS,
  KEYSTORE_ERRORS,
  PORTAL_ERRORS,
  STREAM_ERRORS,
  SUBJECTS_ERRORS,
} from './codes.ts';

/** Every layer's catalog by its home, in the order docs/errors.md presents them. */
export const CATALOGS = {
  engine: ENGINE_ERRORS,
  keystore: KEYSTORE_ERRORS,
  control: CONTROL_ERRORS,
  subjects: SUBJECTS_ERRORS,
  identity: IDENTITY_ERRORS,
  doors: DOOR_ERRORS,
  audit: AUDIT_ERRORS,
  stream: STREAM_ERRORS,
  portal: PORTAL_ERRORS,
  db: DB_ERRORS,
  gateway: GATEWAY_ERRORS,
} as const;

/** every code veil answers with, of every layer */
export type ErrorCode = { [K in keyof typeof CATALOGS]: keyof (typeof CATALOGS)[K] }[keyof typeof CATALOGS];

/**
 * veil's whole error catalog, the engine's codes and every layer's (codes.ts): the codes every
 * door can answer with, for the OpenAPI document, the portal's error pages and the docs check. A
 * code is defined once: a second home is refused when this module loads.
 */
export const ERROR_CATALOG: Readonly<Record<ErrorCode, ErrorEntry>> = gather();

function gather(): Record<ErrorCode, ErrorEntry> {
  const all: Record<string, ErrorEntry> = {};
  for (const [home, catalog] of Object.entries(CATALOGS) as [string, Record<string, ErrorEntry>][]) {
    for (const [code, entry] of Object.entries(catalog)) {
      if (Object.hasOwn(all, code)) throw new Error(`error code ${code} is defined twice (again in ${home})`);
      all[code] = entry;
    }
  }
  return all as Record<ErrorCode, ErrorEntry>;
}
