import { CommanderError, type Command } from 'commander';
import { RastroError } from 'rastro/internal/errors.js';
import { usageBlock } from './help-format.js';
import { CommandLineMisuse, unknownCommandBeforeHelp, usageErrorOf } from './misuse.js';
import { buildProgram } from './program.js';
import { UsageError } from './usage-error.js';

/** Prints a failure the way every command does; returns the exit code (1 the work failed, 2 misuse). */
function report(err: unknown, running: Command | undefined): number {
  if (err instanceof CommandLineMisuse && err.error.exitCode === 0) return 0; // --help, --version
  const usage = err instanceof CommandLineMisuse ? usageErrorOf(err) : err;
  if (usage instanceof UsageError) {
    const block = usage.usage ?? (running ? usageBlock(running) : '(rastro --help lists the commands and options)');
    console.error(`rastro: ${usage.message}\n\n${block}`);
    return 2;
  }
  if (err instanceof CommanderError) console.error(`rastro: ${err.message.replace(/^error: /, '')}`);
  else if (err instanceof RastroError) console.error(`rastro: ${err.message} [${err.code}]`);
  else console.error(`rastro: ${err instanceof Error ? err.message : String(err)}`);
  return 1;
}

/**
 * Runs the command line `argv` (without node and the script) and returns the exit code. Output
 * goes to stdout, progress and errors to stderr.
 */
export async function runCli(argv: string[]): Promise<number> {
  const program = buildProgram();
  if (argv.length === 0) {
    program.outputHelp();
    return 0;
  }
  const unknown = unknownCommandBeforeHelp(program, argv);
  if (unknown) return report(unknown, undefined);
  let running: Command | undefined;
  program.hook('preAction', (_program, action) => {
    running = action;
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    return report(err, running);
  }
}
