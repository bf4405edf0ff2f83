import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AuditSink } from '../audit/index.ts';
import type { ConfigVersions, EngineHolder } from '../control/index.ts';
import type { CachingVerifier, TokenService } from '../identity/index.ts';
import { provisionKeys, requireKeys, type LocalKeystore } from '../keystore/index.ts';
import type { ConfigPort } from '../portal/config-port.ts';
import { PipelineMetrics } from '../portal/pipeline-metrics.ts';
import { registerPortal } from '../portal/portal.ts';
import { compileVeilConfigText, type VeilConfig } from './config-file.ts';
import type { ErasureService } from '../subjects/index.ts';

const SANDBOX_THREAD = new URL('./portal-sandbox-thread.ts', import.meta.url);

/**
 * The admin portal's port onto the wiring (src/portal/config-port.ts): the configuration file's
 * compiler (every section), the keystore policy of a publish — `development` creates the keys a
 * version references and the keystore lacks, otherwise each must already be there — and the
 * sandbox thread's entry, which compiles with the same compiler.
 */
export function portalConfigPort(keystore: LocalKeystore, development: boolean): ConfigPort {
  return {
    compile: compileVeilConfigText,
    async prepareKeys(config) {
      if (development) await provisionKeys(config, keystore);
      else requireKeys(config, keystore);
    },
    sandboxWorker: SANDBOX_THREAD,
  };
}

export interface PortalWiring {
  holder: EngineHolder<VeilConfig>;
  versions: ConfigVersions;
  keystore: LocalKeystore;
  tokens: TokenService;
  verifier: CachingVerifier;
  audit: AuditSink;
  logger: Logger;
  now: () => Date;
  /** publishing creates the keys a version references and the keystore lacks */
  development: boolean;
  /** the service's base URL, for "copy as curl" */
  baseUrl: string;
  devClientId?: string | undefined;
  /** how often the pipelines' processor metrics URLs are scraped (default 5000 ms) */
  metricsScrapeMs?: number | undefined;
  /** the Subjects page's look-ups and erasures (the service's, so the portal's receipts and audit are the API's) */
  erasures?: ErasureService;
}

/**
 * Registers the admin portal under /admin of the service's app, with its port onto the wiring and
 * the scraper of the pipelines' processor metrics (returned, not started).
 */
export function openPortal(app: FastifyInstance, w: PortalWiring): PipelineMetrics {
  const pipelineMetrics = new PipelineMetrics({
    pipelines: () => w.holder.get().config.pipelines,
    intervalMs: w.metricsScrapeMs ?? 5000,
    allowedHosts: () => w.holder.get().config.portal.metricsAllowedHosts,
    // source.url is origin and path only: never a user, password or query
    onChange: (pipeline, source) =>
      w.logger[source.state === 'unreachable' ? 'warn' : 'info'](
        { pipeline, url: source.url, state: source.state, reason: source.reason },
        'portal: pipeline processor metrics',
      ),
  });
  registerPortal(app, {
    holder: w.holder,
    pipelineMetrics,
    versions: w.versions,
    configPort: portalConfigPort(w.keystore, w.development),
    keystore: w.keystore,
    tokens: w.tokens,
    verifier: { verify: (token) => w.verifier.verifyHeader(`Bearer ${token}`) },
    audit: w.audit,
    now: w.now,
    baseUrl: w.baseUrl,
    // the portal section of the configuration the process starts with
    portal: w.holder.get().config.portal,
    ...(w.devClientId !== undefined ? { devClientId: w.devClientId } : {}),
    ...(w.erasures ? { erasures: w.erasures } : {}),
  });
  return pipelineMetrics;
}
