import { html, idOf, type Html } from '../html.ts';
import type { PipelineView } from '../config-port.ts';
import type { PipelineMetrics } from '../pipeline-metrics.ts';
import { holds, type Session } from '../sessions.ts';
import { findingField, planFindings } from '../unmapped-draft.ts';
import { postForm } from './layout.ts';
import { formatNumber } from './sparkline.ts';

/**
 * The unmapped guard's findings of one pipeline (`veil_stream_unmapped_findings_total`, summed
 * over the reachable processors): path, kind, records dead-lettered, and what a draft would do
 * with each — the field it maps the path to, or why it cannot. Path and kind are label values a
 * processor sent: the html tag escapes them, and only those planFindings accepts (a pipeline path,
 * a kind veil detects) go into the editor's draft form, which the server checks again.
 */
export function unmappedFindingsView(name: string, pipeline: PipelineView, metrics: PipelineMetrics | undefined, session: Session): Html {
  if (!pipeline.metricsUrls?.length) return html``;
  const found = metrics?.findings(name);
  if (!found || found.reachable === 0) return html``;
  const title = idOf('findings', name);
  if (found.findings.length === 0) {
    return html`<h3 id="${title}">Personal data at paths the mapping does not name</h3>
<p class="muted">None reported by the reachable processors (no record dead-lettered <code>UNMAPPED_PERSONAL_DATA</code> since each started).</p>`;
  }
  const plans = planFindings(found.findings, pipeline);
  const mappable = found.findings.filter((_, i) => plans[i]!.map);
  const action = typeof pipeline.unmapped === 'string' ? pipeline.unmapped : pipeline.unmapped?.action;
  return html`<h3 id="${title}">Personal data at paths the mapping does not name</h3>
${action === 'report' ? html`<p class="warning"><strong>Report mode:</strong> the unmapped guard of ${name} protects nothing. The records counted as passed reached the clean topic with these values in clear. Map or allow the paths below, then set <code>unmapped: dead-letter</code>.</p>` : ''}
<p>Records the unmapped guard dead-lettered (<code>UNMAPPED_PERSONAL_DATA</code>), or passed in report mode, by the path and kind it found first, summed over the ${found.reachable} reachable processor(s) since each started.</p>
<div class="scroll"><table class="findings" aria-labelledby="${title}"><thead><tr><th scope="col">Path</th><th scope="col">Kind</th><th scope="col">Records dead-lettered</th><th scope="col">Records passed (report mode)</th><th scope="col">In a draft</th></tr></thead>
<tbody>${found.findings.map((f, i) => {
    const plan = plans[i]!;
    return html`<tr><th scope="row"><code>${f.path}</code></th><td>${f.kind}</td><td class="num">${formatNumber(f.records)}</td><td class="num">${formatNumber(f.reported ?? 0)}</td>
<td>${plan.map ? html`mapped as <code>${plan.field}</code>` : html`<span class="muted">${plan.note}</span>`}</td></tr>`;
  })}</tbody></table></div>
${found.omitted ? html`<p class="muted">${found.omitted} more (path, kind) pair(s) not listed: the page keeps the ${found.findings.length} with the most records.</p>` : ''}
<ul class="muted notes">
<li><code>*</code> in a path: the data sits in an object key (a map keyed by emails, say), which no path can name: change the producer, or allow the path (<code>unmapped.allow</code>) if the keys are not personal data.</li>
<li><code>(other)</code>: paths beyond the 100 per pipeline a processor names; its log names each path and kind once.</li>
<li><code>tag:&lt;TAG&gt;</code>: a field the writer's schema tags so; map the tag (<code>tags: { TAG: Class.property }</code>), not the path.</li>
</ul>
${
  !mappable.length
    ? ''
    : holds(session, 'editor')
      ? postForm(
          session,
          '/admin/pipelines/draft',
          html`<input type="hidden" name="pipeline" value="${name}">${mappable.map((f) => html`<input type="hidden" name="finding" value="${findingField(f)}">`)}
<p>A new draft from the active version in which <strong>${name}</strong> maps the ${mappable.length} path(s) marked "mapped as" (its class gains the properties it lacks, with the sequence and key Discovery proposes for the kind); review and publish it as any draft.</p>
<button type="submit">Create a draft mapping these paths</button>`,
          { label: `Create a draft mapping the paths of ${name}` },
        )
      : html`<p class="muted">An editor can turn the ${mappable.length} path(s) marked "mapped as" into a draft mapping.</p>`
}`;
}
