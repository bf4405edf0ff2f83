import { layerFaultType, VeilError } from '../engine/index.ts';

/** The command line's faults, printed by the command that meets them, never as a VeilError's JSON. */
export const CLI_FAULTS = {
  /** a command line the command cannot run (exit 2); its message names options, never a value given */
  USAGE: { retriable: false },
} as const;

export type CliFaultCode = keyof typeof CLI_FAULTS;

/** A fault of the command line: one of the codes above. */
export class CliFault extends layerFaultType(CLI_FAULTS) {}

/** A failure as one JSON document for stderr/stdout: code, message, details; never a stack or value. */
export function errorDocument(error: unknown): { error: { code: string; message: string; retriable: boolean; details?: unknown } } {
  if (error instanceof VeilError) {
    return { error: { code: error.code, message: error.message, retriable: error.retriable, details: error.details.length ? error.details : undefined } };
  }
  return { error: { code: 'INTERNAL', message: 'unexpected internal error', retriable: false } };
}
