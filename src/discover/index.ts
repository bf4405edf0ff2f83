// The discover module's front door: the detectors of personal data and what a field's name says
// (shared by `veil discover`, the drift guard and the database drift check), the profiler and the
// proposals `veil discover` writes, and the record formats pipelines name. Outside src/discover
// only this file is imported (tools/eslint-plugin-veil.js, front-doors).
export {
  cardNetwork,
  isDateOfBirth,
  isEmail,
  isFrNir,
  isIban,
  isNationalPhone,
  isPersonName,
  isPostalAddress,
  isUkNino,
  isUsSsn,
  KINDS,
  luhnValid,
  normaliseName,
  type Kind,
} from './detectors.ts';
export { contextOf, CTX_ADDRESS, CTX_BIRTH, CTX_CARD, CTX_NATIONAL_ID, CTX_NEGATIVE, CTX_ORGANISATION, CTX_PERSON_NAME, CTX_PHONE } from './field-context.ts';
export { mergePipelineFields, mergeProposal } from './merge-draft.ts';
export { isDataKey, MASKED, pathSegment, Profiler, type Finding } from './profile.ts';
export { classNameFor, propose, protectionOf } from './propose.ts';
export { RECORD_FORMATS, type RecordFormat } from './record-formats.ts';
export { DiscoverFault } from './errors.ts';
export { decodedSamples, sampleFile, sampleTable, type SampleReport, type Sampled } from './samples.ts';
