// Vitest globalSetup of `npm test`: the harness's copy of the stack's template (tools/harness/pipeline.ts) is
// synthesized once here, before the workers start, and cached under .local/harness/; on a fresh clone every
// integration file starting at once would otherwise synthesize it at the same time, each importing
// aws-cdk-lib.
import { stackTemplate } from '../../tools/harness/template.js';

export default async function setup(): Promise<void> {
  await stackTemplate();
}
