// Vitest globalSetup: a missing moto_server or cfn-lint is named, with the one command that installs them,
// before any test starts (not as a Python traceback or an ENOENT halfway through the run).
import { requireTools } from '../../tools/local/moto.js';

export default function setup(): void {
  requireTools(['python3', 'moto_server', 'cfn-lint']);
}
