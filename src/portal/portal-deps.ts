import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSink } from '../audit/index.ts';
import type { ConfigVersions, EngineHolder } from '../control/index.ts';
import type { AdminRight, Caller, TokenService } from '../identity/index.ts';
import type { LocalKeystore } from '../keystore/index.ts';
import type { ConfigPort, ConfigView } from './config-port.ts';
import type { Html } from './html.ts';
import type { PipelineMetrics } from './pipeline-metrics.ts';
import type { PortalConfig } from './portal-config.ts';
import type { SandboxRunner } from './sandbox-runner.ts';
import type { Session, SessionStore } from './sessions.ts';
import type { ErasureService } from '../subjects/index.ts';

export interface PortalDeps {
  /** the running configuration, read as its ConfigView; a publish swaps in what `configPort.compile` returned */
  holder: EngineHolder<ConfigView>;
  versions: ConfigVersions;
  /** the wiring's side of a configuration text: the whole configuration's compiler, publishing's key policy, the sandbox thread */
  configPort: ConfigPort;
  keystore: LocalKeystore;
  tokens: TokenService;
  /** verifies the token a sign-in produced or was given (veil's own and external providers') */
  verifier: { verify(token: string): Promise<Caller> };
  audit: AuditSink;
  now: () => Date;
  /** the service's base URL, for "copy as curl" */
  baseUrl: string;
  devClientId?: string;
  /** the scraped processor metrics of the Pipelines page */
  pipelineMetrics?: PipelineMetrics;
  /** the portal section of the configuration the process started with (default: its defaults) */
  portal?: PortalConfig;
  /** the Subjects page: status look-ups and erasures of data subjects (absent: the page says so) */
  erasures?: ErasureService;
}

/** What every portal route gets: the deps, the sessions, and the guard that opens a page. */
export interface PortalContext extends PortalDeps {
  portal: PortalConfig;
  sessions: SessionStore;
  /** the thread that runs what a draft asks for (saved test cases, the sandbox tester) */
  sandbox: SandboxRunner;
  /** the session of a request holding `right` (a POST also a valid CSRF token), or undefined once it has replied */
  guard(req: FastifyRequest, reply: FastifyReply, right: AdminRight): Session | undefined;
  send(reply: FastifyReply, body: Html, status?: number): FastifyReply;
  /** records an administration event (never a value); a failed record fails the change */
  audit_(session: Session | undefined, action: string, target: string | undefined, outcome: 'ok' | 'denied' | 'failed', requestId: string): Promise<void>;
}

/** A parsed urlencoded form: repeated names keep their last value; `all` keeps every value. */
export interface Form {
  get(name: string): string | undefined;
  all(name: string): string[];
  entries(): [string, string][];
}

export function formOf(req: FastifyRequest): Form {
  const params = (req.body instanceof URLSearchParams ? req.body : new URLSearchParams()) as URLSearchParams;
  return {
    get: (name) => params.get(name) ?? undefined,
    all: (name) => params.getAll(name),
    entries: () => [...params.entries()],
  };
}
