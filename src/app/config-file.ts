import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import {
  compileEngineConfig,
  compileText,
  configIssuesOf,
  engineConfigShape,
  formatIssue,
  nameSchema,
  pointerOf,
  ROLE,
  VeilError,
  type CompiledConfig,
  type CompileResult,
  type ConfigIssue,
} from '../engine/index.ts';
import { gatewayIssues, gatewaySchema, type GatewayConfig } from '../gateway/gateway-config.ts';
import { serviceSchema, type ServiceConfig } from '../http/service-config.ts';
import { identityIssues, identitySchema, type IdentityConfig } from '../identity/index.ts';
import { pipelineIssues, pipelineSchema, type PipelineConfig } from '../stream/config/index.ts';
import { responderSchema, type ResponderConfig } from '../stream/config/index.ts';
import { portalSchema, type PortalConfig } from '../portal/portal-config.ts';
import { metricsUrlIssues } from '../portal/metrics-address.ts';

/**
 * veil's configuration file: the engine's sections (keys, sequences, classes, contexts) and one
 * section per layer that uses it — identity (src/identity), service (src/http), pipelines and
 * responders (src/stream), gateway (src/gateway). Published as schemas/config.schema.json.
 */
export const veilConfigSchema = z.strictObject({
  ...engineConfigShape,
  identity: identitySchema.prefault({}),
  service: serviceSchema.prefault({}),
  pipelines: z.record(nameSchema, pipelineSchema).default({}),
  responders: z.record(nameSchema, responderSchema).default({}),
  gateway: gatewaySchema.optional(),
  portal: portalSchema.prefault({}),
});

/** A valid configuration file, each section given to the layer that uses it. Immutable. */
export interface VeilConfig {
  /** what the engine needs: key references, sequences, classes, contexts */
  engine: CompiledConfig;
  /** token issuing and verification settings (src/identity) */
  identity: IdentityConfig;
  /** HTTP limits and rate limits (src/http) */
  service: ServiceConfig;
  /** Kafka protect pipelines (src/stream) */
  pipelines: Readonly<Record<string, PipelineConfig>>;
  /** unprotect-on-demand responders over Kafka (src/stream) */
  responders: Readonly<Record<string, ResponderConfig>>;
  /** the admin portal's guards (src/portal) */
  portal: PortalConfig;
  /** `veil gateway`, the reverse proxy (src/gateway); absent when the file has no gateway section */
  gateway?: GatewayConfig;
  /** a short hash of the configuration document, stamped on what veil produces */
  version: string;
  /** every warning, of every section */
  warnings: readonly ConfigIssue[];
}

/**
 * Validates a configuration document: every section's schema first (all problems at once), then
 * the engine's cross-checks, then those of the other sections against the engine's (identity roles
 * and signing key, pipeline fields and topics). Never throws for a bad configuration.
 */
export function compileVeilConfig(input: unknown): CompileResult<VeilConfig> {
  const parsed = veilConfigSchema.safeParse(input);
  if (!parsed.success) return { issues: configIssuesOf(parsed.error) };
  const doc = parsed.data;
  const engine = compileEngineConfig(doc);
  const roles = new Set(
    Object.values(doc.rightsContexts).flatMap((c) =>
      Object.entries(c.evidences)
        .filter(([n]) => n === ROLE)
        .map(([, v]) => v),
    ),
  );
  const keyType = (reference: string) => (Object.hasOwn(doc.keys, reference) ? doc.keys[reference]!.type : undefined);
  const isField = (className: string, propertyName: string) =>
    Object.hasOwn(doc.classes, className) && Object.hasOwn(doc.classes[className]!.properties, propertyName);
  const issues = [
    ...engine.issues,
    ...within(['identity'], identityIssues(doc.identity, { roles, keyType })),
    ...Object.entries(doc.pipelines).flatMap(([name, p]) => within(['pipelines', name], pipelineIssues(p, isField))),
    ...(doc.gateway && engine.config ? within(['gateway'], gatewayIssues(doc.gateway, engine.config)) : []),
    ...Object.entries(doc.pipelines).flatMap(([name, p]) => within(['pipelines', name], metricsUrlIssues(p.metricsUrls ?? [], doc.portal.metricsAllowedHosts))),
  ];
  if (!engine.config || issues.some((i) => i.severity === 'error')) return { issues };
  return {
    config: {
      engine: engine.config,
      identity: doc.identity,
      service: doc.service,
      pipelines: doc.pipelines,
      responders: doc.responders,
      portal: doc.portal,
      ...(doc.gateway ? { gateway: doc.gateway } : {}),
      version: createHash('sha256').update(JSON.stringify(doc)).digest('hex').slice(0, 12),
      warnings: issues.filter((i) => i.severity === 'warning'),
    },
    issues,
  };
}

/** compileVeilConfig on configuration text (YAML or JSON), every issue with its line. */
export function compileVeilConfigText(text: string): CompileResult<VeilConfig> {
  return compileText(text, compileVeilConfig);
}

/** A section's issues (pointers relative to it) placed at the section. */
function within(path: readonly string[], issues: readonly ConfigIssue[]): ConfigIssue[] {
  const at = pointerOf(path);
  return issues.map((i) => ({ ...i, pointer: `${at}${i.pointer}` }));
}

export interface LoadedConfig {
  file: string;
  config?: VeilConfig;
  issues: ConfigIssue[];
}

/** Reads and compiles a configuration file; unreadable files become an issue, not a throw. */
export async function loadConfigFile(file: string): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code ?? 'unreadable';
    return { file, issues: [{ severity: 'error', pointer: '', message: `cannot read the file (${reason})` }] };
  }
  return { file, ...compileVeilConfigText(text) };
}

/** Loads a configuration that must be valid: CONFIG_INVALID lists every problem. */
export async function requireConfig(file: string): Promise<{ config: VeilConfig; warnings: ConfigIssue[] }> {
  const loaded = await loadConfigFile(file);
  const errors = loaded.issues.filter((i) => i.severity === 'error');
  if (!loaded.config || errors.length) {
    throw new VeilError('CONFIG_INVALID', `configuration ${file} is invalid:\n${errors.map((i) => formatIssue(file, i)).join('\n')}`);
  }
  return { config: loaded.config, warnings: loaded.issues.filter((i) => i.severity === 'warning') };
}
