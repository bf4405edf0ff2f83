import { layerFaultType } from '../engine/index.ts';

/**
 * The discover module's faults: a source `veil discover` cannot sample, whose message the command
 * prints (it names the source, never a record). No client of the service meets them.
 */
export const DISCOVER_FAULTS = {
  /** the table is not named as table or schema.table */
  TABLE_NAME_INVALID: { retriable: false },
  /** psql refused to read the table (its first line of error names the table, not a row) */
  TABLE_UNREADABLE: { retriable: false },
} as const;

export type DiscoverFaultCode = keyof typeof DISCOVER_FAULTS;

/** A fault of the discover module: one of the codes above, a message that never holds a record. */
export class DiscoverFault extends layerFaultType(DISCOVER_FAULTS) {}
