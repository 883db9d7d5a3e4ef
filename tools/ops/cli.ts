// `npm run ops -- <command>`: one tool for on-call to operate a deployed stack (tools/ops/README.md).
// Flow: parse the command line (usage + exit 2 on a bad flag) → AWS clients (AWS, or --aws-endpoint) →
// the stack's resources and feeds → the command's module → a table on stdout, or JSON with --json;
// progress lines and errors on stderr. Commands that change state print their plan and act only with
// --yes. Exit 0 done (or planned), 1 failed or refused, 2 usage.
import { isMain, processIo, quietSdkNodeVersionWarning, reportUsageError } from '../cli-args.js';
import { EXIT_INTERRUPTED, EXIT_OK, type OpsIo, type ParsedCommand, parseOpsArgs, USAGE } from './args.js';

// From args.ts, which commands.ts imports too: a module this one awaits at its top level must not import it.
export { EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, type OpsIo } from './args.js';

/** Runs one ops command; resolves with the exit status. */
export async function runOps(argv: readonly string[], io: OpsIo = processIo): Promise<number> {
  let parsed: ParsedCommand;
  try {
    parsed = parseOpsArgs(argv);
  } catch (error) {
    return reportUsageError(error, USAGE, 'ops: ', io.stderr);
  }
  if (parsed.command === 'help') {
    io.stdout(USAGE);
    return EXIT_OK;
  }
  // The commands (the AWS SDK and the rest) load once the command line parsed: --help and a bad flag answer
  // without them.
  if (parsed.command === 'reconcile') {
    const { runReconcile } = await import('./reconcile/command.js');
    return runReconcile(parsed.argv, io);
  }
  const { runCommand } = await import('./commands.js');
  return runCommand(parsed, io);
}

if (isMain(import.meta.url)) {
  quietSdkNodeVersionWarning();
  // Ctrl-C: the first asks the running command to stop at a safe point; a second one exits at once.
  // One listener for both, kept for the whole run: between removing one listener and adding another, the
  // default action (exit without cleanup) would apply.
  const controller = new AbortController();
  process.on('SIGINT', () => {
    if (controller.signal.aborted) process.exit(EXIT_INTERRUPTED);
    controller.abort();
    process.stderr.write('ops: stopping after the current batch (Ctrl-C again to quit at once)\n');
  });
  process.exitCode = await runOps(process.argv.slice(2), { ...processIo, signal: controller.signal });
}
