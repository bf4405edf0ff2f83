import { VeilError } from '../engine/index.ts';
import type { Env } from '../env/index.ts';

/** How spans are sampled: OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG. */
export interface SamplerSettings {
  root: 'always_on' | 'always_off' | 'traceidratio';
  /** a span with a parent follows the parent's sampled flag (parentbased_*) */
  parentBased: boolean;
  /** the share of traces sampled by traceidratio, 0 to 1 */
  ratio: number;
}

/** What a process exports spans with, read from the standard OpenTelemetry environment. */
export interface TracingSettings {
  /** the OTLP/HTTP traces endpoint (http/protobuf) */
  url: string;
  serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, without service.name (serviceName wins) */
  resource: Record<string, string>;
  sampler: SamplerSettings;
}

const SAMPLERS: Record<string, Omit<SamplerSettings, 'ratio'>> = {
  always_on: { root: 'always_on', parentBased: false },
  always_off: { root: 'always_off', parentBased: false },
  traceidratio: { root: 'traceidratio', parentBased: false },
  parentbased_always_on: { root: 'always_on', parentBased: true },
  parentbased_always_off: { root: 'always_off', parentBased: true },
  parentbased_traceidratio: { root: 'traceidratio', parentBased: true },
};

/**
 * The tracing settings of a process, or undefined when tracing is off. Off unless configured:
 * tracing is on only when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is
 * set (or OTEL_TRACES_EXPORTER=otlp asks for the default endpoint), and OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none turn it off again. Settings veil cannot honour (another protocol or
 * exporter, an unknown sampler, an endpoint that is not an http(s) URL) are CONFIG_INVALID: a
 * process must not believe it exports what goes nowhere. Messages never echo an endpoint (it may
 * carry credentials).
 */
export function tracingSettings(env: Env, defaultServiceName: string): TracingSettings | undefined {
  const get = (name: string) => {
    const v = env[name]?.trim();
    return v ? v : undefined;
  };
  if (get('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const exporters = get('OTEL_TRACES_EXPORTER')
    ?.split(',')
    .map((e) => e.trim().toLowerCase());
  if (exporters?.includes('none')) return undefined;
  if (exporters?.some((e) => e !== 'otlp')) throw invalid('OTEL_TRACES_EXPORTER: veil exports traces with otlp only (or none)');
  const specific = get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = get('OTEL_EXPORTER_OTLP_ENDPOINT') ?? (exporters ? 'http://localhost:4318' : undefined);
  if (specific === undefined && base === undefined) return undefined;
  const protocol = get('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? get('OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol !== undefined && protocol !== 'http/protobuf') throw invalid('OTEL_EXPORTER_OTLP_PROTOCOL: veil exports traces over http/protobuf only');
  // the signal-specific endpoint is used as given; the base endpoint gets the traces path (OTLP exporter spec)
  const url =
    specific !== undefined
      ? httpUrl(specific, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
      : httpUrl(`${base!.replace(/\/+$/, '')}/v1/traces`, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const resource = keyValues(get('OTEL_RESOURCE_ATTRIBUTES'));
  const serviceName = get('OTEL_SERVICE_NAME') ?? resource['service.name'] ?? defaultServiceName;
  delete resource['service.name'];
  return { url, serviceName, resource, sampler: samplerOf(get('OTEL_TRACES_SAMPLER'), get('OTEL_TRACES_SAMPLER_ARG')) };
}

function samplerOf(name: string | undefined, arg: string | undefined): SamplerSettings {
  const kind = SAMPLERS[(name ?? 'parentbased_always_on').toLowerCase()];
  if (!kind)
    throw invalid('OTEL_TRACES_SAMPLER: one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio');
  const ratio = arg === undefined ? 1 : Number(arg);
  if (kind.root === 'traceidratio' && !(ratio >= 0 && ratio <= 1)) throw invalid('OTEL_TRACES_SAMPLER_ARG: a ratio from 0 to 1');
  return { ...kind, ratio };
}

function httpUrl(text: string, variable: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`${variable} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`${variable} is not an http or https URL`);
  return url.toString();
}

/** W3C Baggage-like `key=value,key=value` (percent-encoded), as OTEL_RESOURCE_ATTRIBUTES is written; malformed pairs are skipped. */
function keyValues(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text?.split(',') ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // a malformed escape: that pair is skipped, as the SDKs do
    }
  }
  return out;
}

function invalid(message: string): VeilError {
  return new VeilError('CONFIG_INVALID', `tracing: ${message}`);
}
