import { layerFaultType } from '../engine/index.ts';

/** The native core's faults: it is not built, or it refused a call's arguments. Raised inside veil, never answered to a client. */
export const NATIVE_FAULTS = {
  /** native/veil-native.node is not there or does not load: veil stops, naming the build command */
  NATIVE_CORE_MISSING: { retriable: false },
} as const;

export type NativeFaultCode = keyof typeof NATIVE_FAULTS;

export class NativeFault extends layerFaultType(NATIVE_FAULTS) {}
