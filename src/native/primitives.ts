import { JS_PRIMITIVES, type GcmPrimitive, type MacPrimitive, type NumeralCipher, type Primitives, type SivPrimitive, type SivSeal } from '../engine/index.ts';
import { fpeKeyring, gcmKeyring, hmacKeyring, nativeCore, offsetsOf, sivKeyring } from './core.ts';
import type { FpeKeyring, FpeMode, GcmKeyring, HmacKeyring, OpenedBatch, SivKeyring } from './keyrings.ts';

/**
 * The engine's keyed primitives on the native core (issue 42): the contract of
 * src/engine/crypto/primitives.ts, checked against the JavaScript engine's (test/native). Each
 * primitive holds one key in a keyring of its own, so the key's native state is dropped (and
 * zeroized) when the engine drops the primitive (a rotated-out version). Keys scoped to a data
 * subject stay on the JavaScript engine's primitives (`subjectKeys`), by measure, not by failure.
 * Loading the core fails loudly (NATIVE_CORE_MISSING): there is no silent JavaScript fallback.
 */
export function nativePrimitives(): Primitives {
  // loaded now, not at the first key: a core that does not load stops the caller at start
  nativeCore();
  return {
    // a subject's key protects its values one call at a time: an N-API call (~0.6 µs) and its
    // arguments cost more than the JavaScript cipher of one value (bench:subjects prints both),
    // until subject keys cross into the core by the batch (issue 42)
    subjectKeys: JS_PRIMITIVES,
    aesSiv: (key) => new NativeSiv(key),
    aesGcm: (key) => new NativeGcm(key),
    hmacSha256: (key) => new NativeMac(key),
    ff1: (key, radix, tweak) => new NativeNumerals('ff1', key, radix, tweak),
    ff31: (key, radix, tweak) => new NativeNumerals('ff3-1', key, radix, tweak),
  };
}

/** the one key id each primitive's keyring holds */
const KEY = 'k';

/** values laid back to back: each item's bytes from `of(item)`, into one buffer and its offsets */
function laidOut<T>(items: readonly T[], of: (item: T) => Uint8Array): { bytes: Buffer; offsets: Uint32Array } {
  const parts = items.map(of);
  const offsets = offsetsOf(parts.map((p) => p.length));
  const bytes = Buffer.allocUnsafe(offsets[parts.length]!);
  parts.forEach((p, i) => bytes.set(p, offsets[i]));
  return { bytes, offsets };
}

/** an opened batch as open() answers each value: its plaintext, or undefined when it failed */
function unpacked({ plaintexts, offsets, failed }: OpenedBatch): (Uint8Array | undefined)[] {
  const out: (Uint8Array | undefined)[] = Array.from({ length: offsets.length - 1 }, (_, i) => plaintexts.subarray(offsets[i], offsets[i + 1]));
  for (const i of failed) out[i] = undefined;
  return out;
}

interface SivState {
  /** the associated data as the core's call takes it (a copy: the caller's arrays may change) */
  readonly ad: Uint8Array[];
}

class NativeSiv implements SivPrimitive {
  private readonly ring: SivKeyring = sivKeyring();

  constructor(key: Uint8Array) {
    this.ring.add(KEY, key);
  }

  /** the core computes S2V's D per batch itself: the state is the associated data */
  prefix(associatedData: readonly Uint8Array[]): object {
    return { ad: associatedData.map((a) => Uint8Array.from(a)) } satisfies SivState;
  }

  sealInPlace<T extends Uint8Array>(prefix: object, out: T, offset: number, length: number): T {
    this.sealMany(prefix, [{ out, offset, length }]);
    return out;
  }

  sealMany(prefix: object, items: readonly SivSeal[]): void {
    const { bytes, offsets } = laidOut(items, (it) => it.out.subarray(it.offset + 16, it.offset + 16 + it.length));
    const sealed = this.ring.sealMany(KEY, (prefix as SivState).ad, bytes, offsets);
    items.forEach((it, i) => it.out.set(sealed.subarray(offsets[i]! + 16 * i, offsets[i + 1]! + 16 * (i + 1)), it.offset));
  }

  open(prefix: object, sealed: Uint8Array): Uint8Array | undefined {
    return this.openMany(prefix, [sealed])[0];
  }

  openMany(prefix: object, sealed: readonly Uint8Array[]): (Uint8Array | undefined)[] {
    const { bytes, offsets } = laidOut(sealed, (s) => s);
    return unpacked(this.ring.openMany(KEY, (prefix as SivState).ad, bytes, offsets));
  }
}

interface GcmState {
  readonly aad: Uint8Array;
}

/** one seal of a batch: the plaintext at out[offset, +length) encrypted in place, its tag after it */
type GcmItem = Parameters<GcmPrimitive['sealMany']>[0][number];

class NativeGcm implements GcmPrimitive {
  private readonly ring: GcmKeyring = gcmKeyring();

  constructor(key: Uint8Array) {
    this.ring.add(KEY, key);
  }

  prepareAad(aad: Uint8Array): object {
    return { aad: Uint8Array.from(aad) } satisfies GcmState;
  }

  sealInPlace<T extends Uint8Array>(nonce: Uint8Array, aad: object, out: T, offset: number, length: number): T {
    this.sealMany([{ nonce, aad, out, offset, length }]);
    return out;
  }

  sealMany(items: readonly GcmItem[]): void {
    // a batch shares its associated data; the core takes one per call, so items are grouped by it
    const byAad = Map.groupBy(items, (it) => it.aad);
    for (const [aad, group] of byAad) {
      const nonces = laidOut(group, (it) => it.nonce).bytes;
      const { bytes, offsets } = laidOut(group, (it) => it.out.subarray(it.offset, it.offset + it.length));
      const sealed = this.ring.sealMany(KEY, (aad as GcmState).aad, nonces, bytes, offsets);
      // value i's nonce || C || tag starts at offsets[i] + 28 × i: C || tag goes back in place
      group.forEach((it, i) => it.out.set(sealed.subarray(offsets[i]! + 28 * i + 12, offsets[i + 1]! + 28 * (i + 1)), it.offset));
    }
  }

  open(nonce: Uint8Array, aad: object, sealed: Uint8Array): Uint8Array | undefined {
    // nonce || C || tag laid out once, as the core reads a batch of one
    const bytes = Buffer.allocUnsafe(nonce.length + sealed.length);
    bytes.set(nonce, 0);
    bytes.set(sealed, nonce.length);
    return unpacked(this.ring.openMany(KEY, (aad as GcmState).aad, bytes, Uint32Array.of(0, bytes.length)))[0];
  }

  openMany(aad: object, sealed: readonly Uint8Array[]): (Uint8Array | undefined)[] {
    const { bytes, offsets } = laidOut(sealed, (s) => s);
    return unpacked(this.ring.openMany(KEY, (aad as GcmState).aad, bytes, offsets));
  }
}

class NativeMac implements MacPrimitive {
  private readonly ring: HmacKeyring = hmacKeyring();

  constructor(key: Uint8Array) {
    this.ring.add(KEY, key);
  }

  macMany(prefix: Uint8Array, values: readonly Uint8Array[], tagBytes: number): Uint8Array[] {
    const { bytes, offsets } = laidOut(values, (v) => v);
    const tags = this.ring.macMany(KEY, prefix, bytes, offsets, tagBytes);
    return values.map((_, i) => tags.subarray(tagBytes * i, tagBytes * (i + 1)));
  }
}

class NativeNumerals implements NumeralCipher {
  private readonly ring: FpeKeyring = fpeKeyring();
  private readonly radix: number;
  private readonly tweak: Uint8Array;

  constructor(mode: FpeMode, key: Uint8Array, radix: number, tweak: Uint8Array) {
    this.ring.add(KEY, mode, key);
    this.radix = radix;
    this.tweak = Uint8Array.from(tweak);
  }

  encrypt(x: ArrayLike<number>): number[] {
    return this.encryptMany([x])[0]!;
  }

  decrypt(x: ArrayLike<number>): number[] {
    return this.decryptMany([x])[0]!;
  }

  encryptMany(xs: readonly ArrayLike<number>[]): number[][] {
    return this.many(xs, true);
  }

  decryptMany(xs: readonly ArrayLike<number>[]): number[][] {
    return this.many(xs, false);
  }

  /** plain loops in and out: TypedArray.set from an array and Array.from a subarray cost more than the cipher */
  private many(xs: readonly ArrayLike<number>[], forward: boolean): number[][] {
    const offsets = new Uint32Array(xs.length + 1);
    for (let i = 0; i < xs.length; i++) offsets[i + 1] = offsets[i]! + xs[i]!.length;
    const numerals = new Uint16Array(offsets[xs.length]!);
    for (let i = 0, at = 0; i < xs.length; i++) {
      const x = xs[i]!;
      for (let j = 0; j < x.length; j++) numerals[at++] = x[j]!;
    }
    const out = (forward ? this.ring.encryptMany : this.ring.decryptMany).call(this.ring, KEY, this.radix, this.tweak, numerals, offsets);
    const results = new Array<number[]>(xs.length);
    for (let i = 0, at = 0; i < xs.length; i++) {
      const y = new Array<number>(xs[i]!.length);
      for (let j = 0; j < y.length; j++) y[j] = out[at++]!;
      results[i] = y;
    }
    return results;
  }
}
