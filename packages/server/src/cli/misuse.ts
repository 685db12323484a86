import type { Command, CommanderError } from 'commander';
import { commandPath, runsItself } from './command-tree.js';
import { usageBlock } from './help-format.js';
import { UsageError } from './usage-error.js';

/** A misuse commander found while parsing, with the command it was parsing. */
export class CommandLineMisuse extends Error {
  constructor(
    readonly error: CommanderError,
    readonly command: Command,
  ) {
    super(error.message);
    this.name = 'CommandLineMisuse';
  }
}

const quoted = (message: string) => /'([^']*)'/.exec(message)?.[1] ?? '';

/** Commander's `(Did you mean status?)`, when it has a suggestion. */
const suggestion = (message: string) => /\(Did you mean ([^?]*)\?\)/.exec(message)?.[1];

/** One sentence naming the problem, from commander's error and the command it concerns. */
function misuseMessage(error: CommanderError, command: Command): string {
  const path = commandPath(command);
  const words = path.split(' ').slice(1).join(' ') || path; // `outbox parked`, after the `rastro: ` prefix
  const hint = suggestion(error.message);
  const withHint = (text: string) => (hint ? `${text} (did you mean ${hint}?)` : text);
  switch (error.code) {
    case 'commander.unknownCommand':
      return withHint(command.parent ? `unknown ${command.name()} command ${command.args[0]}` : `unknown command ${command.args[0]}`);
    case 'commander.unknownOption':
      return withHint(`Unknown option '${quoted(error.message)}' for ${path}`);
    case 'commander.help':
      return `${words} needs a command`;
    case 'commander.missingArgument': {
      const name = quoted(error.message);
      const argument = command.registeredArguments.find((a) => a.name() === name);
      return `${words} needs ${argument?.description || `<${name}>`}`;
    }
    case 'commander.optionMissingArgument':
      return `${quoted(error.message).split(' ')[0]} needs a value`;
    case 'commander.missingMandatoryOptionValue':
      return `${words} needs ${quoted(error.message)}`;
    case 'commander.invalidArgument':
      // commander: "option '--days <n>' argument 'soon' is invalid. <the parser's message>"
      return /is invalid(?: for argument '[^']*')?\. (.*)$/s.exec(error.message)?.[1] ?? error.message.replace(/^error: /, '');
    case 'commander.excessArguments':
      return `unexpected argument ${JSON.stringify(command.args[command.registeredArguments.length] ?? '')} for ${path}`;
    case 'commander.conflictingOption': {
      const position = (flag: string) => command.options.findIndex((option) => option.long === flag);
      const [a, b] = [...error.message.matchAll(/option '([^' ]+)/g)].map((m) => m[1]!).sort((x, y) => position(x) - position(y));
      return `choose ${a} or ${b}, not both`;
    }
    default:
      return error.message.replace(/^error: /, '');
  }
}

/** The misuse as a {@link UsageError}: a message and the usage lines of the command concerned. */
export function usageErrorOf(misuse: CommandLineMisuse): UsageError {
  return new UsageError(misuseMessage(misuse.error, misuse.command), usageBlock(misuse.command));
}

const HELP_FLAGS = new Set(['--help', '-h']);

/**
 * `rastro nosuch --help`: commander answers `--help` with the help of the last command it
 * recognised, so a word that names no command would print the general help and exit 0. Any
 * word where a command is expected must name one, with `--help` as without it.
 */
export function unknownCommandBeforeHelp(program: Command, argv: string[]): UsageError | undefined {
  if (!argv.some((word) => HELP_FLAGS.has(word))) return undefined;
  let command = program;
  for (const word of argv) {
    // An option, an argument of a command that runs itself, or a group's default command: commander's to judge.
    if (word.startsWith('-') || command.commands.length === 0 || runsItself(command)) return undefined;
    if ((command as unknown as { _defaultCommandName?: string })._defaultCommandName) return undefined;
    const next = command.commands.find((sub) => sub.name() === word || sub.aliases().includes(word));
    if (!next) {
      if (word === 'help' && command === program) return undefined;
      return new UsageError(command.parent ? `unknown ${command.name()} command ${word}` : `unknown command ${word}`, usageBlock(command));
    }
    command = next;
  }
  return undefined;
}
