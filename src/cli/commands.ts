import type { Command } from 'commander';
import { registerDemoCommands } from './demo-command.js';
import { registerInboxCommands } from './inbox-commands.js';
import { registerOrderCommands } from './order-commands.js';
import { registerOutboxCommands } from './outbox-commands.js';
import { registerProcessingCommands } from './processing-commands.js';
import { registerServerCommands } from './server-commands.js';

/** Adds commands to the program: `program.command('name')…` or `group(program, 'name', …).command(…)`. */
export type CommandRegistration = (program: Command) => void;

/**
 * Every command of rastro, in the order `rastro --help` lists them. A new command is a
 * registration function in its own module, added here; help, --help, exit codes and the
 * misuse messages come with it.
 */
export const COMMANDS: readonly CommandRegistration[] = [
  registerServerCommands,
  registerProcessingCommands,
  registerOutboxCommands,
  registerInboxCommands,
  registerOrderCommands,
  registerDemoCommands,
];
