import type { Command } from 'commander';
import { registerAuditCommand } from './audit-command.js';
import { registerDemoCommands } from './demo-command.js';
import { registerInboxCommands } from './inbox-commands.js';
import { registerOrderCommands } from './order-commands.js';
import { registerOutboxCommands } from './outbox-commands.js';
import { registerProcessingCommands } from './processing-commands.js';
import { registerReconcileCommand } from './reconcile-command.js';
import { registerServerCommands } from './server-commands.js';
import { registerTrailCommands } from './trail-commands.js';

/** Adds commands to the program: `program.command('name')…` or `group(program, 'name', …).command(…)`. */
export type CommandRegistration = (program: Command) => void;

/**
 * Every command of rastro, in the order `rastro --help` lists them. A new command is a
 * registration function in its own module, added here; `--help`, the usage lines, exit codes
 * and misuse messages come with it, and test/cli/command-line.test.ts checks its help.
 *
 * @example
 * ```ts
 * // src/cli/reconcile-command.ts
 * export function registerReconcileCommand(program: Command): void {
 *   program.command('reconcile').description('ask providers about uncertain effects')
 *     .option('--once', 'one round, then exit').addOption(limitOption(100)).addOption(jsonOption())
 *     .action((options: { once?: boolean; limit: number; json?: boolean }) => withStore((store) => reconcile(store, options)));
 *   group(program, 'demo', 'stories told end to end on an embedded database').command('charges')
 *     .description('the charges story end to end on an embedded database').action(runChargesDemo);
 * }
 * ```
 */
export const COMMANDS: readonly CommandRegistration[] = [
  registerServerCommands,
  registerProcessingCommands,
  registerReconcileCommand,
  registerAuditCommand,
  registerTrailCommands,
  registerOutboxCommands,
  registerInboxCommands,
  registerOrderCommands,
  registerDemoCommands,
];
