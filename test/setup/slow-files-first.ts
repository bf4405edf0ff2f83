import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Files that start real components (Kafka, PostgreSQL, child processes, benches): the long ones. */
const REAL_COMPONENTS = /^test\/(bench|integration|security)\//;

/**
 * Starts the real-component files before the unit files. With two workers a long file started
 * last runs alone at the end; vitest orders by the durations it cached, but a fresh clone (CI) has
 * none, and its fallback, larger files first, puts short files of long runs (the schemathesis and
 * bench smoke tests: 2–3 minutes each) behind two hundred unit files. Within each class the
 * order is vitest's own (cached durations, else size), and groups (sequence.groupOrder) keep theirs.
 */
export default class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    const rank = (spec: TestSpecification) => (REAL_COMPONENTS.test(relative(root, spec.moduleId)) ? 0 : 1);
    return (await super.sort(files)).sort((a, b) => group(a) - group(b) || rank(a) - rank(b));
  }
}
