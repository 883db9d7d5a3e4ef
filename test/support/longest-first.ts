// A vitest sequencer that starts a tier's longest files first, so that the two workers end together instead of
// one of them starting a long file near the end. Vitest orders by the durations it cached from the last run when
// it has them, and by file size otherwise (a fresh checkout, CI), where small but long files would come last.
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
      return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
    }
  };
}
