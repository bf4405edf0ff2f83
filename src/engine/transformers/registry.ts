import type { StepConfig } from '../config/schema.ts';
import { aesGcm } from './aes-gcm.ts';
import { aesSiv } from './aes-siv.ts';
import { ff1 } from './ff1.ts';
import { ff31 } from './ff3-1.ts';
import { hmacSha256 } from './hmac-sha256.ts';
import { mask } from './mask.ts';
import { redact } from './redact.ts';
import type { KeyRef, Transformer, TransformerDeps } from './transformer.ts';

/** Which key type each keyed step needs, and whether a step can be inverted. */
export const STEP_KEY_TYPE = { 'aes-siv': 'aes-siv', 'aes-gcm': 'aes-gcm', ff1: 'ff1', 'ff3-1': 'ff3-1', 'hmac-sha256': 'hmac-sha256' } as const;
export const IRREVERSIBLE_STEPS: ReadonlySet<StepConfig['type']> = new Set(['hmac-sha256', 'mask', 'redact']);

/** Builds the transformer of one configured step; `keyRef` resolves the step's key reference. */
export function createTransformer(step: StepConfig, keyRef: (name: string) => KeyRef, deps: TransformerDeps): Transformer {
  switch (step.type) {
    case 'aes-siv':
      return aesSiv({ ...step, key: keyRef(step.key) }, deps);
    case 'aes-gcm':
      return aesGcm({ ...step, key: keyRef(step.key) }, deps);
    case 'ff1':
      return ff1({ ...step, key: keyRef(step.key) }, deps);
    case 'ff3-1':
      return ff31({ ...step, key: keyRef(step.key) }, deps);
    case 'hmac-sha256':
      return hmacSha256({ ...step, key: keyRef(step.key) }, deps);
    case 'mask':
      return mask(step);
    case 'redact':
      return redact(step);
  }
}
