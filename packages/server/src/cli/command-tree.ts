import type { Command } from 'commander';

/**
 * The subcommand group `name` of `parent` (`rastro outbox …`), created the first time a command
 * is registered in it, so two modules can add commands to one group (`demo commission`, `demo orders`).
 */
export function group(parent: Command, name: string, summary: string): Command {
  return parent.commands.find((command) => command.name() === name) ?? parent.command(name).summary(summary).description(summary);
}

/** `rastro outbox parked retry`: the words that run `command`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/** Whether the command does something itself (a leaf, or `replay` which also has `replay diff`). */
export const runsItself = (command: Command): boolean => (command as unknown as { _actionHandler: unknown })._actionHandler != null;

/** Every command under `root` that runs something, depth first, in registration order. */
export function runnableCommands(root: Command): Command[] {
  const found: Command[] = [];
  const visit = (command: Command) => {
    if (command !== root && runsItself(command)) found.push(command);
    command.commands.forEach(visit);
  };
  visit(root);
  return found;
}

/** Every command under `root` (groups included), depth first. */
export function allCommands(root: Command): Command[] {
  return root.commands.flatMap((command) => [command, ...allCommands(command)]);
}
