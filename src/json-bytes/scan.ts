import { isUtf8 } from 'node:buffer';
import { JsonBytesFault } from './errors.ts';
import { foldKey } from './paths.ts';

/**
 * A single-pass validating scanner of UTF-8 JSON that reports where mapped paths land, as byte
 * spans, without building the document. It accepts exactly what JSON.parse accepts on the decoded
 * text, and rejects what is not valid UTF-8. It keeps its own stack, so no nesting depth can
 * overflow the call stack. Adapter-neutral: the stream pipelines' JSON serde and the gateway's
 * body rewriting both use it, each turning its JSON_SYNTAX fault (isNotJson) and the events into its own errors.
 */

/**
 * What the mappings need one value to be, merged over all mappings that reach it and compiled
 * once per mapping list (see paths.ts), so that scanning allocates nothing per token.
 * Mappings are numbered by their index.
 */
export interface Expectation {
  /** mappings that need an object here: the keys they look up, one group per distinct name */
  readonly keys: readonly KeyGroup[];
  readonly objectMs: readonly number[];
  /** mappings with an `[]` step here, and what each element must be for them */
  readonly arrayMs: readonly number[];
  readonly elements: Expectation | null;
  /** mappings whose mapped value this is */
  readonly leafMs: readonly number[];
  /** every mapping above: for a null here */
  readonly allMs: readonly number[];
  /** a quiet path (CompileOptions.quiet) ends here: the visitor sees nothing of this value, nor its key */
  readonly quiet?: boolean;
}

/** An object key to compare keys with as the scanner does (matchKey): raw bytes, folded or not. */
export interface KeyName {
  readonly name: string;
  /** the name as UTF-8, compared with a key's raw bytes when the key has no escapes */
  readonly bytes: Buffer;
  /** `name` is case-folded (paths.ts foldKey) and keys are compared folded */
  readonly folded?: boolean;
}

export interface KeyGroup extends KeyName {
  /** the mappings that look the name up: each has an absent location when the object lacks it */
  readonly ms: readonly number[];
  readonly value: Expectation;
}

/**
 * Event kinds, reported as four numbers (mapping, kind, start, end) in document order. Leaves are
 * spans of raw bytes (a string with its quotes); the others are findings the caller turns into
 * errors or passes, in mapping order, like protectRecord would.
 */
export const EV_STRING = 0;
export const EV_RAW = 1;
export const EV_MISSING = 2;
export const EV_SHAPE = 3;
export const EV_NO_ARRAY = 4;
export const EV_NOT_SCALAR = 5;

/**
 * Sees what no mapping names: every string and number that is not a mapped leaf, and every object
 * key (a key can itself be data: `{"byEmail": {"ann@example.com": …}}`). Spans are raw bytes (a
 * string with its quotes, a key with its quotes); `place` tells where the scan stands, on demand,
 * so that a visitor that finds nothing costs no path. Called synchronously during the scan.
 */
export interface UnmappedVisitor {
  value(b: Buffer, kind: number, start: number, end: number, place: ScanPlace): void;
  key(b: Buffer, start: number, end: number, place: ScanPlace): void;
  /**
   * The TRAIT_* bits a key must hold one of to be visited: a visitor that looks only at keys with
   * digits, `@` or escapes is not called for the plain words most keys are. Every key when absent.
   */
  readonly keyTraits?: number;
}

/** One step of where the scan stands: an object key (decoded) or an array element (null). */
export type PlaceStep = string | null;

export interface ScanPlace {
  /** the keys and array steps from the root to the value or key being visited (a visited key is the last step) */
  steps(): PlaceStep[];
  /** the same with each array step's element index: a JSON pointer's steps */
  trail(): (string | number)[];
  /** how many steps steps() would hold, without building them */
  stepCount(): number;
  /** step `i` (0-based) of steps(): a key decoded, or null for an array element — one step, not the whole list */
  stepAt(i: number): PlaceStep;
  /** whether step `i` is `step` (null: an array element), compared on the key's bytes as mapped paths are: nothing decoded */
  stepIs(i: number, step: KeyName | null): boolean;
  /** the raw span, quotes included, of the key naming the value being visited — its own, or for an array element the array's — or -1s at the root */
  keyStart(): number;
  keyEnd(): number;
  /**
   * What the string being visited (a string value or a key) holds, as TRAIT_* bits gathered while
   * it was scanned: a visitor needs no second pass over a string to learn it has no digit, `@` or
   * escape (most words, codes and keys). Meaningless for numbers.
   */
  stringTraits(): number;
  /** how many ASCII digits the string being visited holds as written (an escape's hex digits do not count); meaningless for numbers */
  stringDigits(): number;
}

/** a string holds an ASCII digit, as written (an escape's hex digits do not count) */
export const TRAIT_DIGIT = 1;
/** a string holds `@`, as written */
export const TRAIT_AT = 2;
/** a string holds an escape (`\`): what it stands for (a digit, an `@`) is known only decoded */
export const TRAIT_ESCAPE = 4;

/** The bytes are not one UTF-8 JSON text. Carries no position or byte: callers report it in their own terms. */
function notJson(): JsonBytesFault {
  return new JsonBytesFault('JSON_SYNTAX', 'not JSON');
}

/**
 * Validates `b` as one JSON text and writes the events of `root`'s mappings into `events` from
 * index `from`, returning the index after the last; throws a JSON_SYNTAX JsonBytesFault. A caller that scans
 * record after record may pass one list each time: what lies past the returned index is stale.
 */
export function scanJson(b: Buffer, root: Expectation | null, events: number[], from = 0, visitor?: UnmappedVisitor): number {
  // Native (SIMD) validation up front rejects overlong forms, surrogates and truncated
  // sequences anywhere, so the scanner needs no UTF-8 logic: bytes >= 0x80 are only legal in strings.
  if (!isUtf8(b)) throw notJson();
  const scanner = (sharedScanner ??= new Scanner());
  scanner.reset(b, events, from, visitor);
  try {
    scanner.run(root);
    return scanner.written;
  } finally {
    // the shared scanner keeps no record's bytes alive past its scan
    scanner.reset(EMPTY, NO_EVENTS, 0, undefined);
  }
}

/** A mapped container open on the stack: the keys still to find, or what array elements must be. */
interface Frame {
  readonly keys: readonly KeyGroup[];
  readonly found: boolean[];
  readonly elements: Expectation | null;
}

// An expectation belongs to one place of the mapped tree, so it is open at most once at a time:
// its frame is made once and reset when its container opens (a frame per record is garbage).
const objectFrames = new WeakMap<Expectation, Frame>();
const arrayFrames = new WeakMap<Expectation, Frame>();

function objectFrame(exp: Expectation): Frame {
  let frame = objectFrames.get(exp);
  if (frame === undefined) objectFrames.set(exp, (frame = { keys: exp.keys, found: exp.keys.map(() => false), elements: null }));
  else frame.found.fill(false);
  return frame;
}

function arrayFrame(exp: Expectation, elements: Expectation): Frame {
  let frame = arrayFrames.get(exp);
  if (frame === undefined) arrayFrames.set(exp, (frame = { keys: NO_KEYS, found: [], elements }));
  return frame;
}

const VALUE = 0;
const AFTER_VALUE = 1;
const KEY = 2;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const NO_KEYS: readonly KeyGroup[] = [];

// Scans are synchronous and never nest, so one stack serves them all: a typed array per record
// would be a good part of a small record's garbage. Rare deep documents get their own.
const MAX_SHARED_KINDS = 4096;
let sharedKinds = new Uint8Array(64);
let sharedScanner: Scanner | undefined;
const EMPTY = Buffer.alloc(0);
const NO_EVENTS: number[] = [];

class Scanner implements ScanPlace {
  private b: Buffer = EMPTY;
  private visitor: UnmappedVisitor | undefined;
  /** with a visitor: the span of the current key of each open object, or the current element index of each open array, by depth */
  // a typed array: a plain array grown by index (an array's slot holds only its start) is holey and costs a lookup per read
  private keySpans = new Float64Array(128);
  private out: number[] = NO_EVENTS;
  /** index in `out` of the next event */
  written = 0;
  private depth = 0;
  /** the opening byte of each open container; grows on demand, so depth is bounded by memory only */
  private kinds = sharedKinds;
  /**
   * Frames of the open mapped containers. A mapped container's parent is mapped too, so they are
   * always depths 1..mappedDepth: deeper levels are known unmapped without a lookup.
   */
  private readonly frames: Frame[] = [];
  private mappedDepth = 0;
  /**
   * With a visitor: the depth of the innermost open object, whose current key names the place —
   * its own, or an array's (`phones` for each of `"phones": [...]`); 0 outside any object. Kept
   * as containers open and close, since a visitor asks it for most values.
   */
  private naming = 0;
  /** with a visitor: the depth of the quiet container being scanned (Expectation.quiet), whose insides are not shown; 0 for none */
  private quietDepth = 0;
  /** TRAIT_* bits of the last string scanned with a visitor, and its digits */
  private traits = 0;
  private digits = 0;
  /** the visitor's keyTraits: a key is visited when it holds one of them, or always when it has none */
  private keyTraits = 0;
  private allKeys = true;

  /** Scans are synchronous and never nest, so one scanner serves them all; this readies it for `b`. */
  reset(b: Buffer, events: number[], from: number, visitor: UnmappedVisitor | undefined): void {
    this.b = b;
    this.visitor = visitor;
    this.keyTraits = visitor?.keyTraits ?? 0;
    this.allKeys = visitor?.keyTraits === undefined;
    this.out = events;
    this.written = from;
    this.depth = 0;
    this.mappedDepth = 0;
    this.naming = 0;
    this.quietDepth = 0;
    if (this.kinds.length > MAX_SHARED_KINDS) this.kinds = sharedKinds;
  }

  // The hot loop keeps the position in a local and calls only small pure helpers: field writes
  // per token cost more than the scanning itself.
  run(root: Expectation | null): void {
    const b = this.b;
    const len = b.length;
    let p = 0;
    let exp = root;
    let state = VALUE;
    for (;;) {
      p = skipWs(b, p, len);
      const c = p < len ? b[p]! : -1;
      if (state === VALUE) {
        if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
          this.open(c, exp, p);
          p = skipWs(b, p + 1, len);
          if (b[p] === c + 2) {
            // `}` and `]` are their opener + 2
            p++;
            this.close(p);
            state = AFTER_VALUE;
          } else if (c === OPEN_OBJECT) state = KEY;
          else exp = this.frame()?.elements ?? null;
          continue;
        }
        const start = p;
        let kind = EV_RAW;
        if (c === 0x22) {
          p = this.visitor === undefined ? scanString(b, p, len) : this.scanStringTraits(b, p, len);
          kind = EV_STRING;
        } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) p = scanNumber(b, p);
        else {
          p = scanLiteral(b, p, c);
          if (c === 0x6e) kind = EV_MISSING;
        }
        if (exp !== null) this.located(exp, kind, start, p);
        // a visitor sees what no mapping names, outside quiet paths
        const shown = kind !== EV_MISSING && (exp === null || (exp.leafMs.length === 0 && exp.quiet !== true)) && this.quietDepth === 0;
        if (this.visitor !== undefined && shown) this.visitor.value(b, kind, start, p, this);
        state = AFTER_VALUE;
      } else if (state === AFTER_VALUE) {
        if (this.depth === 0) {
          if (p !== len) throw notJson();
          return;
        }
        const inObject = this.kinds[this.depth] === OPEN_OBJECT;
        if (c === 0x2c) {
          p++;
          if (inObject) state = KEY;
          else {
            if (this.visitor !== undefined) this.keySpans[2 * this.depth]!++;
            exp = this.frame()?.elements ?? null;
            state = VALUE;
          }
        } else if (c === (inObject ? 0x7d : 0x5d)) {
          p++;
          this.close(p);
        } else throw notJson();
      } else {
        if (c !== 0x22) throw notJson();
        const start = p;
        p = this.visitor === undefined ? scanString(b, p, len) : this.scanStringTraits(b, p, len);
        const frame = this.frame();
        exp = frame === undefined ? null : matchKey(b, start, p, frame);
        if (this.visitor !== undefined) {
          this.keySpans[2 * this.depth] = start;
          this.keySpans[2 * this.depth + 1] = p;
          if ((this.allKeys || (this.traits & this.keyTraits) !== 0) && this.quietDepth === 0 && exp?.quiet !== true) this.visitor.key(b, start, p, this);
        }
        p = skipWs(b, p, len);
        if (b[p] !== 0x3a) throw notJson();
        p++;
        state = VALUE;
      }
    }
  }

  stringTraits(): number {
    return this.traits;
  }

  stringDigits(): number {
    return this.digits;
  }

  /**
   * scanString for a visitor, also gathering the string's TRAIT_* bits. Ordered for text: bytes
   * from `]` up (lower-case letters, most punctuation, UTF-8 sequences) cost one comparison.
   */
  private scanStringTraits(b: Buffer, p: number, len: number): number {
    let traits = 0;
    let digits = 0;
    for (p++; ;) {
      if (p >= len) throw notJson();
      const c = b[p]!;
      if (c > 0x5c || (c >= 0x41 && c < 0x5c)) p++;
      else if (c === 0x5c) {
        traits |= TRAIT_ESCAPE;
        p = scanEscape(b, p + 1);
      } else if (c === 0x22) {
        this.traits = digits > 0 ? traits | TRAIT_DIGIT : traits;
        this.digits = digits;
        return p + 1;
      } else if (c < 0x20) throw notJson();
      else {
        if (c >= 0x30 && c <= 0x39) digits++;
        else if (c === 0x40) traits |= TRAIT_AT;
        p++;
      }
    }
  }

  steps(): PlaceStep[] {
    return this.trail().map((step) => (typeof step === 'number' ? null : step));
  }

  stepCount(): number {
    return this.depth;
  }

  stepAt(i: number): PlaceStep {
    const d = i + 1;
    return this.kinds[d] !== OPEN_OBJECT ? null : keyText(this.b, this.keySpans[2 * d]!, this.keySpans[2 * d + 1]!);
  }

  stepIs(i: number, step: KeyName | null): boolean {
    const d = i + 1;
    if (this.kinds[d] !== OPEN_OBJECT) return step === null;
    return step !== null && keyIs(this.b, this.keySpans[2 * d]!, this.keySpans[2 * d + 1]!, step);
  }

  trail(): (string | number)[] {
    const out: (string | number)[] = [];
    for (let d = 1; d <= this.depth; d++) {
      if (this.kinds[d] !== OPEN_OBJECT) out.push(this.keySpans[2 * d]!);
      else out.push(keyText(this.b, this.keySpans[2 * d]!, this.keySpans[2 * d + 1]!));
    }
    return out;
  }

  keyStart(): number {
    return this.naming === 0 ? -1 : this.keySpans[2 * this.naming]!;
  }

  keyEnd(): number {
    return this.naming === 0 ? -1 : this.keySpans[2 * this.naming + 1]!;
  }

  private frame(): Frame | undefined {
    return this.depth <= this.mappedDepth ? this.frames[this.depth - 1] : undefined;
  }

  private open(c: number, exp: Expectation | null, p: number): void {
    const depth = ++this.depth;
    if (depth === this.kinds.length) {
      const grown = new Uint8Array(depth * 2);
      grown.set(this.kinds);
      this.kinds = grown;
      if (grown.length <= MAX_SHARED_KINDS) sharedKinds = grown;
    }
    this.kinds[depth] = c;
    if (this.visitor !== undefined) {
      if (2 * depth + 1 >= this.keySpans.length) {
        const grown = new Float64Array(this.keySpans.length * 2);
        grown.set(this.keySpans);
        this.keySpans = grown;
      }
      if (c === OPEN_ARRAY) this.keySpans[2 * depth] = 0;
      else this.naming = depth;
      if (exp?.quiet === true && this.quietDepth === 0) this.quietDepth = depth;
    }
    if (exp === null) return;
    let frame: Frame | undefined;
    if (c === OPEN_OBJECT) {
      this.events(exp.arrayMs, EV_NO_ARRAY, p, p);
      this.events(exp.leafMs, EV_NOT_SCALAR, p, p);
      if (exp.keys.length > 0) frame = objectFrame(exp);
    } else {
      this.events(exp.objectMs, EV_SHAPE, p, p);
      this.events(exp.leafMs, EV_NOT_SCALAR, p, p);
      if (exp.elements !== null) frame = arrayFrame(exp, exp.elements);
    }
    if (frame === undefined) return;
    this.frames[depth - 1] = frame;
    this.mappedDepth = depth;
  }

  private close(p: number): void {
    if (this.depth === this.mappedDepth) {
      const frame = this.frames[this.depth - 1]!;
      // a key the object lacks is one absent location, like a missing property in rewriteAt
      for (let k = 0; k < frame.keys.length; k++) if (!frame.found[k]) this.events(frame.keys[k]!.ms, EV_MISSING, p, p);
      this.mappedDepth--;
    }
    if (this.quietDepth === this.depth) this.quietDepth = 0;
    if (this.naming === this.depth) {
      let d = this.depth - 1;
      while (d > 0 && this.kinds[d] !== OPEN_OBJECT) d--;
      this.naming = d;
    }
    this.depth--;
  }

  private located(exp: Expectation, kind: number, start: number, end: number): void {
    if (kind === EV_MISSING) {
      this.events(exp.allMs, EV_MISSING, start, end);
      return;
    }
    this.events(exp.leafMs, kind, start, end);
    this.events(exp.objectMs, EV_SHAPE, start, end);
    this.events(exp.arrayMs, EV_NO_ARRAY, start, end);
  }

  private events(ms: readonly number[], kind: number, start: number, end: number): void {
    const out = this.out;
    let n = this.written;
    for (let i = 0; i < ms.length; i++) {
      out[n] = ms[i]!;
      out[n + 1] = kind;
      out[n + 2] = start;
      out[n + 3] = end;
      n += 4;
    }
    this.written = n;
  }
}

function skipWs(b: Buffer, p: number, len: number): number {
  while (p < len) {
    const c = b[p]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return p;
    p++;
  }
  return p;
}

/** Validates the string whose opening quote is at p; returns the position after its closing quote. */
function scanString(b: Buffer, p: number, len: number): number {
  p++;
  for (;;) {
    if (p >= len) throw notJson();
    const c = b[p]!;
    if (c === 0x22) return p + 1;
    if (c === 0x5c) p = scanEscape(b, p + 1);
    else if (c < 0x20) throw notJson();
    else p++;
  }
}

/** Validates the escape whose letter is at p; returns the position after it. */
function scanEscape(b: Buffer, p: number): number {
  const c = b[p];
  if (c === 0x75) {
    if (!isHex(b[p + 1]) || !isHex(b[p + 2]) || !isHex(b[p + 3]) || !isHex(b[p + 4])) throw notJson();
    return p + 5;
  }
  if (c === 0x22 || c === 0x5c || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) return p + 1;
  throw notJson();
}

function scanNumber(b: Buffer, p: number): number {
  if (b[p] === 0x2d) p++;
  if (b[p] === 0x30) p++;
  else if (isDigit(b[p])) while (isDigit(b[p])) p++;
  else throw notJson();
  if (b[p] === 0x2e) {
    p++;
    if (!isDigit(b[p])) throw notJson();
    while (isDigit(b[p])) p++;
  }
  if (b[p] === 0x65 || b[p] === 0x45) {
    p++;
    if (b[p] === 0x2b || b[p] === 0x2d) p++;
    if (!isDigit(b[p])) throw notJson();
    while (isDigit(b[p])) p++;
  }
  return p;
}

function scanLiteral(b: Buffer, p: number, c: number): number {
  if (c === 0x74 && b[p + 1] === 0x72 && b[p + 2] === 0x75 && b[p + 3] === 0x65) return p + 4;
  if (c === 0x66 && b[p + 1] === 0x61 && b[p + 2] === 0x6c && b[p + 3] === 0x73 && b[p + 4] === 0x65) return p + 5;
  if (c === 0x6e && b[p + 1] === 0x75 && b[p + 2] === 0x6c && b[p + 3] === 0x6c) return p + 4;
  throw notJson();
}

/** What the value of the key spanning [start, end) (with quotes) must be, if any mapping looks it up. */
function matchKey(b: Buffer, start: number, end: number, frame: Frame): Expectation | null {
  const escaped = hasBackslash(b, start + 1, end - 1);
  // a frame's groups are all folded or none (one compile option per tree)
  const folded = frame.keys[0]?.folded === true;
  let decoded = escaped ? (JSON.parse(b.toString('utf8', start, end)) as string) : '';
  const plainAscii = !escaped && isAscii(b, start + 1, end - 1);
  if (folded && !plainAscii) decoded = foldKey(escaped ? decoded : b.toString('utf8', start + 1, end - 1));
  for (let k = 0; k < frame.keys.length; k++) {
    const group = frame.keys[k]!;
    const same = folded
      ? plainAscii
        ? asciiFoldEquals(b, start + 1, end - 1, group.bytes)
        : decoded === group.name
      : escaped
        ? decoded === group.name
        : rawEquals(b, start + 1, end - 1, group.bytes);
    if (same) {
      // every occurrence of a duplicate key is a location: parsers disagree on which one wins
      frame.found[k] = true;
      return group.value;
    }
  }
  return null;
}

/** Whether the key spanning [start, end) (with quotes) is `name`, as matchKey compares one. */
function keyIs(b: Buffer, start: number, end: number, name: KeyName): boolean {
  if (!hasBackslash(b, start + 1, end - 1) && isAscii(b, start + 1, end - 1)) {
    return name.folded === true ? asciiFoldEquals(b, start + 1, end - 1, name.bytes) : rawEquals(b, start + 1, end - 1, name.bytes);
  }
  const text = keyText(b, start, end);
  return (name.folded === true ? foldKey(text) : text) === name.name;
}

/**
 * The text of a located scalar: a string's decoded value, or a number's or boolean's text as
 * written (so 1.0 stays "1.0" and 2^63-1 keeps its digits).
 */
export function leafText(b: Buffer, kind: number, start: number, end: number): string {
  if (kind === EV_RAW) return b.toString('latin1', start, end);
  if (kind !== EV_STRING) throw new Error(`scan event ${kind} has no text`);
  if (hasBackslash(b, start + 1, end - 1)) return JSON.parse(b.toString('utf8', start, end)) as string;
  return b.toString('utf8', start + 1, end - 1);
}

/** A key's decoded text, given its span with quotes. */
export function keyText(b: Buffer, start: number, end: number): string {
  if (hasBackslash(b, start + 1, end - 1)) return JSON.parse(b.toString('utf8', start, end)) as string;
  return b.toString('utf8', start + 1, end - 1);
}

export function hasBackslash(b: Buffer, start: number, end: number): boolean {
  for (let k = start; k < end; k++) if (b[k] === 0x5c) return true;
  return false;
}

function rawEquals(b: Buffer, start: number, end: number, bytes: Buffer): boolean {
  if (end - start !== bytes.length) return false;
  for (let k = 0; k < bytes.length; k++) if (b[start + k] !== bytes[k]) return false;
  return true;
}

function isAscii(b: Buffer, start: number, end: number): boolean {
  for (let k = start; k < end; k++) if (b[k]! >= 0x80) return false;
  return true;
}

/** Raw ASCII bytes equal to `folded` (already lower-case) ignoring ASCII case. */
function asciiFoldEquals(b: Buffer, start: number, end: number, folded: Buffer): boolean {
  if (end - start !== folded.length) return false;
  for (let k = 0; k < folded.length; k++) {
    const c = b[start + k]!;
    if ((c >= 0x41 && c <= 0x5a ? c + 0x20 : c) !== folded[k]) return false;
  }
  return true;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}
