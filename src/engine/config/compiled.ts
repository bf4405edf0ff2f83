import type { StepConfig } from './schema.ts';
import type { KeyRef } from '../transformers/transformer.ts';
import type { ConfigIssue } from './issues.ts';

export type Direction = 'forward' | 'inverse';

export interface CompiledSequence {
  name: string;
  steps: readonly StepConfig[];
  reversible: boolean;
  /** some step's key is scoped to the data subject: the values need a subject */
  subjectScoped: boolean;
}

/** What an action does to one property: run a sequence forward, or its inverse in reverse order. */
export interface ActionPlan {
  sequence: string;
  direction: Direction;
}

export interface CompiledField {
  className: string;
  propertyName: string;
  /** action name (Protect, Unprotect, Mask, …) → what it runs */
  actions: ReadonlyMap<string, ActionPlan>;
}

export type Evidence = readonly [name: string, value: string];

export interface CompiledRightsContext {
  name: string;
  evidences: readonly Evidence[];
  grants: readonly { actions: ReadonlySet<string>; fields: readonly string[] }[];
}

export interface CompiledProcessingContext {
  name: string;
  evidences: readonly Evidence[];
  action: string;
}

/** A validated configuration with every cross-reference resolved. Immutable. */
export interface CompiledConfig {
  keys: ReadonlyMap<string, KeyRef>;
  /** what a protect for an erased subject gets: a new key (`new-key`) or SUBJECT_ERASED (`refuse`) */
  subjects: { returning: 'new-key' | 'refuse' };
  sequences: ReadonlyMap<string, CompiledSequence>;
  /** className → propertyName → field */
  classes: ReadonlyMap<string, ReadonlyMap<string, CompiledField>>;
  rightsContexts: readonly CompiledRightsContext[];
  processingContexts: readonly CompiledProcessingContext[];
  rightsEvidenceNames: ReadonlySet<string>;
  processingEvidenceNames: ReadonlySet<string>;
  warnings: readonly ConfigIssue[];
}

export const PROTECT = 'Protect';
export const UNPROTECT = 'Unprotect';
export const ROLE = 'Role';
export const ACTION = 'Action';
/** the processing-context evidence naming the data subject of a request's values (issue 29) */
export const SUBJECT = 'Subject';
