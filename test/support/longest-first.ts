// A vitest sequencer that starts a tier's longest files first, so that the two workers end together instead of
// one of them starting a long file near the end. Vitest orders by the durations it cached from the last run when
// it has them, and by file size otherwise (a fresh checkout, CI), where small but long files would come last.
// It keeps each project's files together, in vitest's order of projects: a worker that finishes a file goes on to
// the next only when that file is of its project, else vitest stops it and starts another, which imports
// everything again (with the unit project's longest file among the integration files, npm test started six
// workers instead of four).
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The sequencer for `sequence.sequencer`: `longest` (paths from the root), longest first, then vitest's order. */
export function longestFirst(longest: readonly string[]): typeof BaseSequencer {
  return class LongestFirst extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const rank = (file: TestSpecification) => {
        const index = longest.indexOf(relative(file.project.config.root, file.moduleId));
        return index === -1 ? longest.length : index;
      };
      const sorted = await super.sort(files);
      const projects = [...new Set(sorted.map((file) => file.project.name))];
      const project = (file: TestSpecification) => projects.indexOf(file.project.name);
      return sorted.sort((a, b) => project(a) - project(b) || rank(a) - rank(b));
    }
  };
}
