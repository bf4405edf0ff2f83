import type { PipelineView } from '../config-port.ts';
import { html, type Html } from '../html.ts';
import type { PipelineMetrics } from '../pipeline-metrics.ts';
import type { Session } from '../sessions.ts';
import { page } from './layout.ts';
import { pipelineMetricsView } from './pipeline-metrics-view.ts';
import { unmappedFindingsView } from './unmapped-findings-view.ts';

/**
 * The Pipelines page (/admin/pipelines): each pipeline of the active version — source, sink, dead
 * letters, its mapped paths and the sequence protecting each — with its processors' metrics and
 * the unmapped guard's findings. `sequenceOf` names the Protect sequence of a Class.property.
 */
export function pipelinesPage(options: {
  session: Session;
  pipelines: readonly (readonly [string, PipelineView])[];
  sequenceOf: (field: string) => string;
  metrics?: PipelineMetrics;
  flash?: string;
}): Html {
  const { session, pipelines } = options;
  return page(
    'Pipelines',
    html`
${
  pipelines.length
    ? pipelines.map(([name, p]) => pipelineSection(name, p, options))
    : html`<p>The active version configures no pipelines (<code>pipelines:</code> section; see config/example-pipeline.yaml).</p>`
}`,
    { session, current: '/admin/pipelines', ...(options.flash ? { flash: options.flash } : {}) },
  );
}

function pipelineSection(name: string, p: PipelineView, options: { session: Session; sequenceOf: (field: string) => string; metrics?: PipelineMetrics }): Html {
  return html`<section><h2>${name}</h2>${p.description ? html`<p>${p.description}</p>` : ''}
<p>Source: ${'topics' in p.source ? p.source.topics.join(', ') : html`topics matching <code>${p.source.pattern}</code>`} → sink: ${'topic' in p.sink ? p.sink.topic : html`<code>${p.sink.rename.from}</code> → <code>${p.sink.rename.to}</code>`}; dead letters: ${p.deadLetterTopic}; ${p.format}, ${p.delivery}.</p>
<div class="scroll"><table><thead><tr><th scope="col">Record path</th><th scope="col">Field</th><th scope="col">Protecting sequence</th></tr></thead>
<tbody>${[...p.fields, ...(p.key ? [{ path: '(record key)', field: p.key.field }] : [])].map((f) => html`<tr><td><code>${f.path}</code></td><td>${f.field}</td><td>${options.sequenceOf(f.field)}</td></tr>`)}</tbody></table></div>
${pipelineMetricsView(name, p.metricsUrls, options.metrics)}
${unmappedFindingsView(name, p, options.metrics, options.session)}</section>`;
}
