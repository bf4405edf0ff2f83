import { createHash, randomUUID } from 'node:crypto';
import { chmod, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VeilError, formatIssue, type ConfigIssue } from '../engine/index.ts';
import { withFileLock } from '../file-lock/index.ts';
import { ControlError } from './errors.ts';

/**
 * What the store checks a configuration file with before adopting it: the wiring's compiler of the
 * whole configuration (src/app/config-file.ts's compileVeilConfigText), which src/control does not import.
 */
export type ConfigCheck = (text: string) => { issues: readonly ConfigIssue[] };

/** The directory under the data dir that holds published versions and drafts. */
export const VERSIONS_DIR = 'config-versions';

export interface VersionMeta {
  number: number;
  publishedAt: string;
  /** who published: the admin's subject, or `file` for a configuration file adopted at start */
  by: string;
  source: 'file' | 'portal' | 'cli';
  note: string;
  /** sha-256 of the text (a file adopted at start is adopted again only when it changed) */
  sha256: string;
  /**
   * from a shared control store: the write's MAC and what it covers besides the text and this
   * metadata (control-auth.ts), so a process can check the version before it runs it
   */
  auth?: { key: number; mac: string; basedOn: number; writer: string; meta: boolean };
}

/** A saved test case of a draft: inputs with the outcome they must have. Sandbox keys only. */
export interface TestCase {
  id: string;
  name: string;
  className: string;
  propertyName: string;
  role: string;
  action: string;
  value: string;
  expect: 'round-trip' | 'denied' | 'masked' | 'changed';
}

export interface DraftMeta {
  id: string;
  basedOn: number;
  createdAt: string;
  updatedAt: string;
  by: string;
  tests: TestCase[];
  /** every identity (issuer and subject) that wrote the draft's text or test cases, the last one last */
  editors?: string[];
}

interface Index {
  active: number;
  versions: VersionMeta[];
}

/**
 * A shared log of versions (the Kafka control store, src/control/kafka-control-log.ts): publish appends a version based
 * on the newest one this process has read; undefined when another process's publish got there
 * first. The log's follower writes every accepted version into this store (mirror).
 */
export interface VersionLog {
  publish(text: string, meta: { by: string; source: VersionMeta['source']; note: string }): Promise<number | undefined>;
  /**
   * Whether a mirrored version's MAC verifies under the key set's control key: every read of a
   * version (to run, revert to, export, diff or draft from it) checks it again, so nothing in the
   * data dir that did not come authenticated from the shared store is used as a version.
   */
  authentic(meta: VersionMeta, text: string): Promise<boolean>;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const versionFile = (n: number) => `${String(n).padStart(4, '0')}.yaml`;
const DRAFT_ID = /^[a-f0-9-]{36}$/;
/** publishes take milliseconds; a start beside many siblings on a loaded machine may queue behind several */
const LOCK_WAIT_MS = 30_000;

/**
 * The configuration's versions in `<dataDir>/config-versions/`: `NNNN.yaml` per published
 * version (mode 0400 files, never rewritten: each is a whole veil configuration that `veil config
 * validate` accepts), `index.json` (metadata and which version is active) and `drafts/<id>.yaml`
 * with `drafts/<id>.json` (base version, author, saved test cases). Writes go through a temporary
 * file and a rename. Several serving processes may share the store (`veil serve --workers N`):
 * each changes the index holding `index.lock` (src/file-lock), re-reading it first, and polls it
 * for versions the others published (active-version-watch.ts).
 */
export class ConfigVersions {
  readonly dir: string;
  private index: Index = { active: 0, versions: [] };
  private log?: VersionLog;

  private constructor(dir: string) {
    this.dir = dir;
  }

  static async open(dataDir: string): Promise<ConfigVersions> {
    const store = new ConfigVersions(join(dataDir, VERSIONS_DIR));
    await mkdir(join(store.dir, 'drafts'), { recursive: true, mode: 0o700 });
    await store.reload();
    return store;
  }

  /** `index.json`, whose file is replaced (a new inode) on every write: the active-version watch polls it. */
  get indexFile(): string {
    return join(this.dir, 'index.json');
  }

  /**
   * Re-reads `index.json`: another process sharing the data dir (a `--workers` sibling, another
   * `veil serve`) may have published since.
   */
  async reload(): Promise<void> {
    try {
      this.index = JSON.parse(await readFile(this.indexFile, 'utf8')) as Index;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new VeilError('CONFIG_INVALID', `${this.dir}/index.json cannot be read`, [], { cause: e });
    }
  }

  /**
   * At start: the configuration file becomes a new published, active version when its text is not
   * the one last adopted from a file (first start, or the operator edited it); otherwise the
   * active version stays — which may be one published in the portal since. Returns the active file.
   * `check` validates the file (CONFIG_INVALID with every error).
   */
  async adopt(configFile: string, now: Date, check: ConfigCheck): Promise<{ file: string; number: number; adopted: boolean }> {
    const text = await readFile(configFile, 'utf8').catch((e: NodeJS.ErrnoException) => {
      throw new VeilError('CONFIG_INVALID', `configuration ${configFile} cannot be read (${e.code ?? 'unreadable'})`);
    });
    // processes sharing the data dir start together: one adopts the file, the others find it
    // adopted (with a shared log, publishToLog settles the race instead)
    const decide = async () => {
      await this.reload();
      const lastFromFile = [...this.index.versions].reverse().find((v) => v.source === 'file');
      if (lastFromFile?.sha256 === sha256(text) && this.index.active) {
        return { file: this.file(this.index.active), number: this.index.active, adopted: false };
      }
      const errors = check(text).issues.filter((i) => i.severity === 'error');
      if (errors.length)
        throw new VeilError('CONFIG_INVALID', `configuration ${configFile} is invalid:\n${errors.map((i) => formatIssue(configFile, i)).join('\n')}`);
      const meta = { by: 'file', source: 'file' as const, note: `adopted from ${configFile}`, now };
      const number = this.log ? await this.publishToLog(text, meta) : await this.publishHere(text, meta);
      return { file: this.file(number), number, adopted: true };
    };
    return this.log ? decide() : this.locked(decide);
  }

  versions(): readonly VersionMeta[] {
    return this.index.versions;
  }

  active(): number {
    return this.index.active;
  }

  file(n: number): string {
    return join(this.dir, versionFile(n));
  }

  async read(n: number): Promise<string> {
    const meta = this.index.versions.find((v) => v.number === n);
    if (!meta) throw new VeilError('NOT_FOUND', `no configuration version ${n}`);
    const text = await readFile(this.file(n), 'utf8');
    if (this.log && !(await this.log.authentic(meta, text))) {
      throw new VeilError(
        'CONFIG_INVALID',
        `configuration version ${n} is not authenticated by the key set (veil-control): it is not read, run or republished`,
      );
    }
    return text;
  }

  /**
   * Removes a version from the mirror: one the shared log holds that does not verify (mirrored by
   * an older veil, which mirrored every version). The active version becomes the newest left.
   */
  async forget(number: number): Promise<void> {
    await this.locked(async () => {
      await this.reload();
      if (!this.index.versions.some((v) => v.number === number)) return;
      const versions = this.index.versions.filter((v) => v.number !== number);
      await this.writeIndex({ active: this.index.active === number ? Math.max(0, ...versions.map((v) => v.number)) : this.index.active, versions });
      await this.removeVersionFile(number);
    });
  }

  /** Publishes through a shared log from now on (the data dir is then its mirror). */
  useLog(log: VersionLog): void {
    this.log = log;
  }

  /**
   * A version accepted by the shared log, written here as the log has it: the file (replacing a
   * local one of that number that differs: the log is the truth) and the index, which makes it
   * the active version.
   */
  async mirror(number: number, text: string, meta: Omit<VersionMeta, 'number' | 'sha256'>): Promise<void> {
    await this.locked(async () => {
      await this.reload();
      const file = this.file(number);
      const existing = await readFile(file, 'utf8').catch(() => undefined);
      if (existing !== text) {
        if (existing !== undefined) await chmod(file, 0o600);
        await writeFile(`${file}.${process.pid}.tmp`, text, { mode: 0o400 });
        await rename(`${file}.${process.pid}.tmp`, file);
      }
      const entry: VersionMeta = { number, ...meta, sha256: sha256(text) };
      const versions = [...this.index.versions.filter((v) => v.number !== number), entry].sort((a, b) => a.number - b.number);
      await this.writeIndex({ active: Math.max(this.index.active, number), versions });
    });
  }

  /** Writes a new immutable version and makes it the active one; the caller has validated it. */
  async publish(text: string, meta: { by: string; source: VersionMeta['source']; note: string; now: Date }): Promise<number> {
    if (this.log) return this.publishToLog(text, meta);
    return this.locked(() => this.publishHere(text, meta));
  }

  /** publish in the data dir alone; the caller holds the lock */
  private async publishHere(text: string, meta: { by: string; source: VersionMeta['source']; note: string; now: Date }): Promise<number> {
    // numbered after what any process sharing the data dir published
    await this.reload();
    const number = Math.max(0, ...this.index.versions.map((v) => v.number)) + 1;
    const file = this.file(number);
    // under the lock, a version file the index does not name was left by a process killed between
    // writing it and the index: it was never published, and is replaced
    await this.removeVersionFile(number);
    // read-only for veil's user alone, like everything else in the data dir
    await writeFile(file, text, { flag: 'wx', mode: 0o400 });
    await chmod(file, 0o400);
    const entry: VersionMeta = { number, publishedAt: meta.now.toISOString(), by: meta.by, source: meta.source, note: meta.note, sha256: sha256(text) };
    await this.writeIndex({ active: number, versions: [...this.index.versions, entry] });
    return number;
  }

  private async removeVersionFile(number: number): Promise<void> {
    await chmod(this.file(number), 0o600).catch(() => undefined);
    await rm(this.file(number), { force: true });
  }

  /**
   * Runs a read-modify-write of the index holding `index.lock`: the processes sharing the data dir
   * (veil serve --workers, a stream group on one host, the CLI) publish and mirror one at a time.
   */
  private locked<T>(body: () => Promise<T>): Promise<T> {
    return withFileLock(
      join(this.dir, 'index.lock'),
      {
        busy: () => new ControlError('CONTROL_STORE_UNAVAILABLE', `${this.dir}/index.lock is held by another veil process`),
        failed: (error) => new ControlError('CONTROL_STORE_UNAVAILABLE', `${this.dir}/index.lock cannot be created`, { cause: error }),
      },
      body,
      LOCK_WAIT_MS,
    );
  }

  /**
   * Appends to the shared log until accepted: a publish that lost a race is based on the newer
   * head and sent again (it becomes the next version: nothing forks, nothing is lost); a file's
   * text that another process adopted meanwhile is not published twice.
   */
  private async publishToLog(text: string, meta: { by: string; source: VersionMeta['source']; note: string }): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const number = await this.log!.publish(text, { by: meta.by, source: meta.source, note: meta.note });
      await this.reload();
      if (number !== undefined) return number;
      const fromFile = [...this.index.versions].reverse().find((v) => v.source === 'file');
      if (meta.source === 'file' && fromFile?.sha256 === sha256(text)) return fromFile.number;
      if (attempt >= 10) throw new ControlError('CONTROL_STORE_UNAVAILABLE', 'publishing lost the race to other publishers 10 times in a row');
    }
  }

  // drafts

  async drafts(): Promise<DraftMeta[]> {
    const names = await readdir(join(this.dir, 'drafts'));
    const metas = await Promise.all(names.filter((n) => n.endsWith('.json')).map((n) => this.draft(n.slice(0, -5))));
    return metas.sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  }

  async createDraft(basedOn: number, text: string, by: string, now: Date, editor: string = by): Promise<DraftMeta> {
    const meta: DraftMeta = { id: randomUUID(), basedOn, createdAt: now.toISOString(), updatedAt: now.toISOString(), by, tests: [], editors: [editor] };
    await this.atomic(this.draftPath(meta.id, 'yaml'), text);
    await this.atomic(this.draftPath(meta.id, 'json'), JSON.stringify(meta, null, 2));
    return meta;
  }

  async draft(id: string): Promise<DraftMeta> {
    try {
      return JSON.parse(await readFile(this.draftPath(id, 'json'), 'utf8')) as DraftMeta;
    } catch {
      throw new VeilError('NOT_FOUND', 'no such draft');
    }
  }

  async draftText(id: string): Promise<string> {
    await this.draft(id);
    return readFile(this.draftPath(id, 'yaml'), 'utf8');
  }

  async saveDraft(id: string, change: { text?: string; tests?: TestCase[] }, now: Date, editor?: string): Promise<DraftMeta> {
    const meta = { ...(await this.draft(id)), updatedAt: now.toISOString() };
    if (editor !== undefined) meta.editors = [...(meta.editors ?? []).filter((e) => e !== editor), editor];
    if (change.tests) meta.tests = change.tests;
    if (change.text !== undefined) await this.atomic(this.draftPath(id, 'yaml'), change.text);
    await this.atomic(this.draftPath(id, 'json'), JSON.stringify(meta, null, 2));
    return meta;
  }

  async deleteDraft(id: string): Promise<void> {
    await this.draft(id);
    await rm(this.draftPath(id, 'yaml'), { force: true });
    await rm(this.draftPath(id, 'json'), { force: true });
  }

  private draftPath(id: string, ext: 'yaml' | 'json'): string {
    if (!DRAFT_ID.test(id)) throw new VeilError('NOT_FOUND', 'no such draft');
    return join(this.dir, 'drafts', `${id}.${ext}`);
  }

  private async writeIndex(index: Index): Promise<void> {
    await this.atomic(join(this.dir, 'index.json'), JSON.stringify(index, null, 2));
    this.index = index;
  }

  private async atomic(file: string, text: string): Promise<void> {
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, text, { mode: 0o600 });
    await rename(tmp, file);
  }
}
