import type { Argument, Command, Help, Option } from 'commander';
import { commandPath, runnableCommands, runsItself } from './command-tree.js';

/**
 * rastro's help layout: the usage lines of every command a group holds (`rastro outbox --help`
 * shows how to run each of its commands), then the arguments, options and commands.
 */

const argumentWord = (argument: Argument) => (argument.required ? `<${argument.name()}>` : `[${argument.name()}]`);

const visibleOptions = (command: Command) => command.options.filter((option) => !option.hidden);

function optionWord(option: Option): string {
  return option.mandatory ? option.flags : `[${option.flags}]`;
}

/** `rastro poll <source> [--provider-url <url>] [--page-size <n>]`. */
export function synopsis(command: Command): string {
  return [commandPath(command), ...command.registeredArguments.map(argumentWord), ...visibleOptions(command).map(optionWord)].join(' ');
}

/** `usage: rastro outbox status [--json]` and, aligned below it, the other commands of a group. */
function usageText(command: Command): string[] {
  const own = runsItself(command) ? [synopsis(command)] : [];
  const [first, ...rest] = command.parent ? [...own, ...runnableCommands(command).map(synopsis)] : [`${command.name()} <command> [options]`];
  return [`usage: ${first}`, ...rest.map((line) => `       ${line}`)];
}

/** The term of a command in its group's list: its words below the group, and its arguments. */
function listTerm(group: Command, command: Command): string {
  const below = commandPath(command).slice(commandPath(group).length + 1);
  return [below, ...command.registeredArguments.map(argumentWord)].join(' ');
}

const summaryOf = (command: Command) => command.summary() || command.description().split('\n')[0] || '';

function section(heading: string, items: [string, string][], helper: Help): string[] {
  if (items.length === 0) return [];
  const width = Math.max(...items.map(([term]) => term.length));
  return [heading, ...items.map(([term, description]) => helper.formatItem(term, width, description, helper)), ''];
}

/** The text of `--help`, for commander's `configureHelp({ formatHelp })`. */
export function formatHelp(command: Command, helper: Help): string {
  const width = helper.helpWidth ?? 80;
  const out = [...usageText(command), ''];
  const description = command.description();
  if (description) out.push(helper.boxWrap(description, width), '');
  out.push(...section('arguments:', command.registeredArguments.map((a) => [argumentWord(a), helper.argumentDescription(a)]), helper));
  const options = helper.visibleOptions(command).map((o): [string, string] => [o.flags, helper.optionDescription(o)]);
  out.push(...section('options:', options, helper));
  const commands = runnableCommands(command).map((sub): [string, string] => [listTerm(command, sub), summaryOf(sub)]);
  if (!command.parent && commands.length > 0) commands.push(['help [command]', 'show the usage of a command']);
  out.push(...section('commands:', commands, helper));
  return out.join('\n');
}

/** What a misuse prints after its message: the command's usage lines and where to read more. */
export function usageBlock(command: Command): string {
  return [...usageText(command), `(${commandPath(command)} --help shows more)`].join('\n');
}
