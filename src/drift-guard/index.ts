/**
 * The drift guard (the `unmapped` guard of pipelines and gateway routes): personal data at a path
 * no mapping names, found by veil discover's detectors (src/discover/detectors.ts) and graded by
 * evidence and the field's name read as words (evidence.ts, src/discover/field-context.ts). One
 * home for its rules: what a value is (value-kinds.ts), the visitor over JSON bytes
 * (json-guard.ts) and the walk over decoded records (object-guard.ts). The adapters bind it:
 * src/stream/serde/{decoded,protobuf}-drift-guard.ts, src/gateway/drift-guard.ts.
 */
export {
  contextOf,
  DEFAULT_THRESHOLD,
  GUARD_KINDS,
  likelihoodLevel,
  mayBePersonal,
  shapeOf,
  shapeOfBytes,
  THRESHOLDS,
  unmappedKeyKindOfBytes,
  unmappedValueKind,
  type GuardKind,
} from './value-kinds.ts';
export { allowedPath, formatPath, JsonGuard, parentContext, quietPath, type AllowedPath, type UnmappedFinding } from './json-guard.ts';
export { ObjectGuard, type ObjectFinding, type PathTree } from './object-guard.ts';
