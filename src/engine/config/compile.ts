import type { z } from 'zod';
import { Alphabet, NAMED_ALPHABETS } from '../fpe/alphabet.ts';
import { IRREVERSIBLE_STEPS, STEP_KEY_TYPE } from '../transformers/registry.ts';
import type { KeyRef } from '../transformers/transformer.ts';
import {
  ACTION,
  PROTECT,
  SUBJECT,
  UNPROTECT,
  type ActionPlan,
  type CompiledConfig,
  type CompiledField,
  type CompiledProcessingContext,
  type CompiledRightsContext,
  type CompiledSequence,
  type Evidence,
} from './compiled.ts';
import { pointerOf, type ConfigIssue } from './issues.ts';
import { parseConfigText } from './parse.ts';
import { engineConfigSchema, type EngineConfigDocument } from './schema.ts';

export interface CompileResult<T = CompiledConfig> {
  config?: T;
  issues: ConfigIssue[];
}

/** Parses and validates configuration text of the engine's sections; never throws for a bad configuration. */
export function compileConfigText(text: string): CompileResult {
  return compileText(text, compileConfig);
}

/**
 * Parses configuration text (YAML, or JSON) and runs `compile` on the value, giving every issue
 * the line of its pointer; never throws for a bad configuration.
 */
export function compileText<T>(text: string, compile: (input: unknown) => CompileResult<T>): CompileResult<T> {
  const parsed = parseConfigText(text);
  if (parsed.issues.length) return { issues: parsed.issues };
  const result = compile(parsed.value);
  for (const issue of result.issues) {
    if (issue.line === undefined) issue.line = parsed.lineOf(pointerToPath(issue.pointer));
  }
  return result;
}

/** Validates and cross-checks a configuration of the engine's sections. */
export function compileConfig(input: unknown): CompileResult {
  const parsed = engineConfigSchema.safeParse(input);
  if (!parsed.success) return { issues: configIssuesOf(parsed.error) };
  return compileEngineConfig(parsed.data);
}

/**
 * Cross-checks the engine's sections of a document that passed its schema (a larger document —
 * the product's configuration file — passes as it is; only these sections are read).
 */
export function compileEngineConfig(doc: EngineConfigDocument): CompileResult {
  return new Compiler(doc).run();
}

/** A schema's problems as configuration issues, each at the pointer of its element. */
export function configIssuesOf(error: z.ZodError): ConfigIssue[] {
  return error.issues.map(zodIssue);
}

function zodIssue(issue: z.core.$ZodIssue): ConfigIssue {
  // an unknown field is reported at the field itself, not at the object holding it
  const path = issue.code === 'unrecognized_keys' && issue.keys.length === 1 ? [...issue.path, issue.keys[0]!] : issue.path;
  return { severity: 'error', pointer: pointerOf(path), message: issue.message };
}

function pointerToPath(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
}

class Compiler {
  private readonly issues: ConfigIssue[] = [];
  private readonly doc: EngineConfigDocument;

  constructor(doc: EngineConfigDocument) {
    this.doc = doc;
  }

  run(): CompileResult {
    const keys = this.keys();
    const sequences = this.sequences(keys);
    const classes = this.classes(sequences);
    // action names come from the document, so one broken binding does not make every use of the action an error too
    const actions = new Set([PROTECT, UNPROTECT]);
    for (const cls of Object.values(this.doc.classes)) for (const p of Object.values(cls.properties)) for (const a of Object.keys(p.actions)) actions.add(a);
    const rightsContexts = this.rightsContexts(classes, actions);
    const processingContexts = this.processingContexts(actions);
    const config: CompiledConfig = {
      keys,
      subjects: { returning: this.doc.subjects.returning },
      sequences,
      classes,
      rightsContexts,
      processingContexts,
      rightsEvidenceNames: new Set(rightsContexts.flatMap((c) => c.evidences.map(([n]) => n))),
      processingEvidenceNames: new Set(processingContexts.flatMap((c) => c.evidences.map(([n]) => n))),
      warnings: this.issues.filter((i) => i.severity === 'warning'),
    };

    return { config: this.issues.some((i) => i.severity === 'error') ? undefined : config, issues: this.issues };
  }

  private error(path: PropertyKey[], message: string): void {
    this.issues.push({ severity: 'error', pointer: pointerOf(path), message });
  }

  private keys(): Map<string, KeyRef> {
    const keys = new Map<string, KeyRef>();
    for (const [name, k] of Object.entries(this.doc.keys)) {
      const id = k.id ?? name;
      if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(id)) this.error(['keys', name], `"${name}" is not a keystore id (lowercase letters, digits, . _ -): set id`);
      keys.set(name, {
        name,
        id,
        type: k.type,
        ...(k.version !== undefined ? { version: k.version } : {}),
        ...(k.scope === 'subject' ? { scope: 'subject' as const } : {}),
      });
      if (k.scope === 'subject') this.subjectKey(name, k);
      else if ((k.type === 'ff1' || k.type === 'ff3-1') && k.version === undefined) {
        this.error(
          ['keys', name, 'version'],
          `${k.type} output has no room for a key version: pin one with version: N (see docs/design.md, "Rotation of FPE keys")`,
        );
      }
    }
    return keys;
  }

  /** A subject-scoped reference: its versions are the subjects' generations; FPE keeps erased ids refused. */
  private subjectKey(name: string, k: EngineConfigDocument['keys'][string]): void {
    if (k.version !== undefined)
      this.error(['keys', name, 'version'], `a key scoped to the subject has no version to pin: its values carry the subject key's generation`);
    if (k.type === 'jwt-es256') this.error(['keys', name, 'scope'], 'a token signing key cannot be scoped to the subject');
    if ((k.type === 'ff1' || k.type === 'ff3-1') && this.doc.subjects.returning !== 'refuse') {
      this.error(
        ['keys', name, 'scope'],
        `${k.type} output has no room for the subject key's generation, so a returning person's new key would unprotect old values to other text: set subjects.returning: refuse`,
      );
    }
  }

  private sequences(keys: Map<string, KeyRef>): Map<string, CompiledSequence> {
    const out = new Map<string, CompiledSequence>();
    for (const [name, seq] of Object.entries(this.doc.sequences)) {
      seq.steps.forEach((step, i) => {
        const at = ['sequences', name, 'steps', i];
        if ('key' in step) {
          const ref = keys.get(step.key);
          const needed = STEP_KEY_TYPE[step.type];
          if (!ref) this.error([...at, 'key'], `key reference "${step.key}" is not defined under keys`);
          else if (ref.type !== needed) this.error([...at, 'key'], `step ${step.type} needs a key of type ${needed}, "${step.key}" is ${ref.type}`);
        }
        if (step.type === 'ff1' || step.type === 'ff3-1') {
          if (step.alphabet && step.customAlphabet !== undefined) this.error(at, 'set alphabet or customAlphabet, not both');
          const chars = step.customAlphabet ?? NAMED_ALPHABETS[step.alphabet ?? 'digits'];
          const problem = Alphabet.problem(chars);
          if (problem) this.error([...at, 'customAlphabet'], `alphabet ${problem}`);
          if (step.type === 'ff1' && step.luhn && chars !== NAMED_ALPHABETS.digits) this.error([...at, 'luhn'], 'luhn needs the digits alphabet');
          if (step.type === 'ff3-1') {
            this.issues.push({
              severity: 'warning',
              pointer: pointerOf(at),
              message: 'ff3-1 is deprecated (NIST SP 800-38G Rev. 1 draft withdraws it); use ff1 for new data',
            });
          }
        }
      });
      const subjectScoped = seq.steps.some((s) => 'key' in s && keys.get(s.key)?.scope === 'subject');
      out.set(name, { name, steps: seq.steps, reversible: seq.steps.every((s) => !IRREVERSIBLE_STEPS.has(s.type)), subjectScoped });
    }
    return out;
  }

  private plan(sequences: Map<string, CompiledSequence>, path: PropertyKey[], sequence: string, direction: ActionPlan['direction']): ActionPlan | undefined {
    const seq = sequences.get(sequence);
    if (!seq) {
      this.error(path, `sequence "${sequence}" is not defined under sequences`);
      return undefined;
    }
    if (direction === 'inverse' && !seq.reversible) {
      const step = seq.steps.findIndex((s) => IRREVERSIBLE_STEPS.has(s.type));
      this.error(
        path,
        `sequence "${sequence}" cannot be inverted: step ${step} (${seq.steps[step]?.type}) is irreversible${path.at(-1) === 'protect' ? '; set unprotect: none' : ''}`,
      );
      return undefined;
    }
    return { sequence, direction };
  }

  private classes(sequences: Map<string, CompiledSequence>): Map<string, Map<string, CompiledField>> {
    const out = new Map<string, Map<string, CompiledField>>();
    for (const [className, cls] of Object.entries(this.doc.classes)) {
      const props = new Map<string, CompiledField>();
      for (const [propertyName, p] of Object.entries(cls.properties)) {
        const at = ['classes', className, 'properties', propertyName];
        const actions = new Map<string, ActionPlan>();
        const protect = this.plan(sequences, [...at, 'protect'], p.protect, 'forward');
        if (protect) actions.set(PROTECT, protect);
        if (protect && p.unprotect === 'inverse') {
          const unprotect = this.plan(sequences, [...at, 'protect'], p.protect, 'inverse');
          if (unprotect) actions.set(UNPROTECT, unprotect);
        }
        for (const [action, binding] of Object.entries(p.actions)) {
          if (action === PROTECT || action === UNPROTECT) {
            this.error([...at, 'actions', action], `${action} is set by protect/unprotect, not under actions`);
            continue;
          }
          const b = typeof binding === 'string' ? { sequence: binding, direction: 'forward' as const } : binding;
          const plan = this.plan(sequences, [...at, 'actions', action], b.sequence, b.direction);
          if (plan) actions.set(action, plan);
        }
        props.set(propertyName, { className, propertyName, actions });
      }
      out.set(className, props);
    }
    return out;
  }

  private rightsContexts(classes: Map<string, Map<string, CompiledField>>, actions: Set<string>): CompiledRightsContext[] {
    return Object.entries(this.doc.rightsContexts).map(([name, rc]) => {
      const at = ['rightsContexts', name];
      const evidences = Object.entries(rc.evidences) as Evidence[];
      if (evidences.length === 0) this.error([...at, 'evidences'], 'a rights context needs at least one evidence (an empty one would match every caller)');
      rc.grants.forEach((g, gi) => {
        g.actions.forEach((a, ai) => {
          if (!actions.has(a)) this.error([...at, 'grants', gi, 'actions', ai], `action "${a}" is not Protect, Unprotect or an action of any property`);
        });
        g.fields.forEach((f, fi) => {
          if (!fieldPatternMatchesAny(f, classes)) this.error([...at, 'grants', gi, 'fields', fi], `"${f}" matches no configured class/property`);
        });
      });
      return { name, evidences, grants: rc.grants.map((g) => ({ actions: new Set(g.actions), fields: g.fields })) };
    });
  }

  private processingContexts(actions: Set<string>): CompiledProcessingContext[] {
    const seen = new Map<string, string>();
    return Object.entries(this.doc.processingContexts).map(([name, pc]) => {
      const at = ['processingContexts', name];
      const evidences = Object.entries(pc.evidences) as Evidence[];
      const action = pc.action ?? pc.evidences[ACTION];
      if (evidences.length === 0) this.error([...at, 'evidences'], 'a processing context needs at least one evidence');
      if (SUBJECT in pc.evidences)
        this.error(
          [...at, 'evidences', SUBJECT],
          'Subject is the evidence by which a caller names the data subject of its values: a configured context cannot match on it',
        );
      if (pc.action && pc.evidences[ACTION] && pc.action !== pc.evidences[ACTION]) {
        this.error(
          [...at, 'action'],
          `action ${pc.action} contradicts the Action evidence ${pc.evidences[ACTION]}: a caller asking for one would get the other`,
        );
      }
      if (!action) this.error(at, 'set action, or an Action evidence that names it');
      else if (!actions.has(action))
        this.error([...at, pc.action ? 'action' : 'evidences'], `action "${action}" is not Protect, Unprotect or an action of any property`);
      const signature = evidences
        .map(([n, v]) => `${n}=${v}`)
        .sort()
        .join('&');
      const twin = seen.get(signature);
      if (twin) this.error([...at, 'evidences'], `has the same evidences as processing context "${twin}": a request could not choose`);
      seen.set(signature, name);
      return { name, evidences, action: action ?? '' };
    });
  }
}

/** `*`, `Class.*` or `Class.property`: does a grant pattern cover a field? */
export function fieldPatternMatches(pattern: string, className: string, propertyName: string): boolean {
  if (pattern === '*') return true;
  const dot = pattern.indexOf('.');
  const cls = pattern.slice(0, dot);
  const prop = pattern.slice(dot + 1);
  return cls === className && (prop === '*' || prop === propertyName);
}

function fieldPatternMatchesAny(pattern: string, classes: Map<string, Map<string, CompiledField>>): boolean {
  for (const [c, props] of classes) for (const p of props.keys()) if (fieldPatternMatches(pattern, c, p)) return true;
  return false;
}
