// The control plane's front door: configuration versions and their mirror, the key-set mirror, the
// signing and checking of writes, the active-version watch, and the control store's two adapters
// (the data dir alone, the embedded default; a compacted Kafka topic shared by every process).
// Outside src/control only this file is imported (tools/eslint-plugin-veil.js, control-front-door).
export { ActiveVersionWatch, type ActiveVersionWatchOptions, type VersionBuilder } from './active-version-watch.ts';
export { ConfigVersions, VERSIONS_DIR, type ConfigCheck, type DraftMeta, type TestCase, type VersionLog, type VersionMeta } from './config-versions.ts';
export { authInput, CONTROL_MAC_KEY } from './control-auth.ts';
export { ControlState, parseWrite, recordKey, type Accepted, type ControlWrite, type History } from './control-log.ts';
export {
  CONTROL_STORE_ENV,
  controlStoreOver,
  controlTopic,
  controlTopicSettings,
  dataDirMirror,
  ensureControlKey,
  mirroredIsAuthentic,
  openControlStore,
  signWrite,
  versionIsAuthentic,
  writeIsAuthentic,
  type AppendLog,
  type ControlStore,
} from './control-store.ts';
export { EngineHolder, type ActiveConfig } from './engine-holder.ts';
export type { KafkaControlLog, KafkaControlLogOptions } from './kafka-control-log.ts';
// the Kafka adapter is loaded when used: a process on the data dir alone never loads kafkajs
export const openKafkaControlLog = async (options: import('./kafka-control-log.ts').KafkaControlLogOptions) =>
  (await import('./kafka-control-log.ts')).KafkaControlLog.open(options);
export { KeysetMirror, type KeysetJudge, type WriteAuthenticator } from './keyset-mirror.ts';
export { VersionMirror, type VersionAuthenticator } from './version-mirror.ts';
