// The ops commands' failure the operator can act on is the tools' CommandError (message, exit 1).
export { CommandError as OpsError } from '../cli-args.js';
