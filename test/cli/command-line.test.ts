import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { allCommands, commandPath } from '../../packages/server/src/cli/command-tree.js';
import { buildProgram } from '../../packages/server/src/cli/program.js';
import { CLI, runRastro } from '../support/cli.js';


/** Runs the built CLI with no database reachable: none of these may need one. */
const rastro = (args: string[]) => runRastro(args, { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', RASTRO_DATA_DIR: '/nonexistent/rastro' });

/** Runs `fn` over `items`, four at a time (each is a process). */
async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += 4) await Promise.all(items.slice(i, i + 4).map(fn));
}

const words = (command: Command) => commandPath(command).split(' ').slice(1);
const tree = allCommands(buildProgram());

describe('the rastro command line', () => {
  it('ends quietly when its reader goes away (rastro --help | head -1)', async () => {
    const child = spawn(process.execPath, [CLI, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // The reader closes the pipe before the help is written, like `head` that has had enough.
    child.stdout.destroy();
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    expect(stderr).not.toMatch(/EPIPE|\n\s+at /);
  });

  it('has the commands the README lists, each with a description', () => {
    const paths = tree.map(commandPath);
    for (const path of ['rastro serve', 'rastro replay diff', 'rastro effects resolve', 'rastro reconcile', 'rastro outbox parked retry', 'rastro inbox dead-letters', 'rastro orders renormalize', 'rastro demo orders', 'rastro demo charges']) {
      expect(paths).toContain(path);
    }
    for (const command of tree) expect(command.description(), commandPath(command)).not.toBe('');
  });

  it('prints the usage of every command and subcommand with --help and -h, on stdout, exit code 0', async () => {
    await inBatches(tree.flatMap((command) => [[command, '--help'], [command, '-h']] as const), async ([command, flag]) => {
      const path = commandPath(command);
      const result = await rastro([...words(command), flag]);
      expect(result.code, `${path} ${flag}`).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout.startsWith(`usage: ${path}`), `${path} ${flag}:\n${result.stdout}`).toBe(true);
      for (const option of command.options) expect(result.stdout, `${path} shows ${option.long}`).toContain(option.long!);
      for (const sub of command.commands) expect(result.stdout, `${path} lists ${sub.name()}`).toContain(`${path} ${sub.name()}`);
      expect(result.stdout).toContain('-h, --help');
    });
  }, 240_000); // two processes per command: minutes on a loaded 2-core machine

  it('prints the overview with --help, -h, help and no command: every command, the conventions and the environment', async () => {
    for (const args of [['--help'], ['-h'], ['help'], []]) {
      const result = await rastro(args);
      expect(result.code, args.join(' ')).toBe(0);
      expect(result.stdout).toMatch(/^usage: rastro <command>/);
      for (const command of tree.filter((c) => c.commands.length === 0)) expect(result.stdout).toContain(`  ${words(command).join(' ')}`);
      expect(result.stdout).toContain('exit codes: 0 done, 1 the work failed');
      for (const name of ['DATABASE_URL', 'RASTRO_SCHEMA', 'RASTRO_BROKER_URL', 'RASTRO_PROVIDER_URL', 'RASTRO_POLL_INTERVAL_SECONDS']) expect(result.stdout).toContain(name);
    }
    const help = await rastro(['help', 'outbox']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: rastro outbox status [--json]');
  });

  it('prints the version of package.json with --version and -V', async () => {
    const { version } = JSON.parse(await readFile(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) expect(await rastro([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('refuses misuse with exit code 2, naming the problem and showing the usage, before it opens a database', async () => {
    const cases: [string[], string, string][] = [
      [['frobnicate'], 'unknown command frobnicate', 'usage: rastro <command>'],
      [['outbox', 'frobnicate'], 'unknown outbox command frobnicate', 'usage: rastro outbox status'],
      [['outbox', 'parked', 'frobnicate'], 'unexpected argument "frobnicate" for rastro outbox parked list', 'usage: rastro outbox parked list'], // list is the default
      [['frobnicate', '--help'], 'unknown command frobnicate', 'usage: rastro <command>'],
      [['outbox', 'frobnicate', '-h'], 'unknown outbox command frobnicate', 'usage: rastro outbox status'],
      [['outbox', 'statsu'], 'unknown outbox command statsu (did you mean status?)', 'usage: rastro outbox status'],
      [['effects'], 'effects needs a command', 'rastro effects resolve <key> --as <outcome>'],
      [['store', 'status', '--frobnicate'], "Unknown option '--frobnicate' for rastro store status", 'usage: rastro store status [--json]'],
      [['outbox', 'status', '--days', '3'], "Unknown option '--days' for rastro outbox status", 'usage: rastro outbox status'],
      [['effects', 'list', '--csv'], "Unknown option '--csv' for rastro effects list", 'usage: rastro effects list'],
      [['replay', 'diff', 'run-1', '--simulate'], "Unknown option '--simulate' for rastro replay diff", 'usage: rastro replay diff <runId>'],
      [['replay', '--simulate', 'diff', 'run-1'], '--simulate is an option of replay, not of replay diff', 'usage: rastro replay <processor>'],
      [['migrate', '--json'], "Unknown option '--json' for rastro migrate", 'usage: rastro migrate'],
      [['replay', 'diff'], 'replay diff needs the run id of a replay --simulate', 'usage: rastro replay diff <runId>'],
      [['effects', 'resolve', 'k'], 'effects resolve needs --as <outcome>', 'usage: rastro effects resolve <key> --as <outcome>'],
      [['effects', 'resolve', 'k', '--as', 'maybe'], '--as must be one of done, failed, retry, got "maybe"', 'usage: rastro effects resolve'],
      [['effects', 'list', '--limit', 'many'], '--limit must be a whole number of at least 1, got "many"', 'usage: rastro effects list'],
      [['effects', 'list', '--limit'], '--limit needs a value', 'usage: rastro effects list'],
      [['parked', 'list', '--limit', '0'], '--limit must be a whole number of at least 1, got "0"', 'usage: rastro parked list'],
      [['relay', '--partitions', '-1'], '--partitions must be a whole number of at least 1, got "-1"', 'usage: rastro relay'],
      [['replay', 'diff', 'run-1', '--csv', '--json'], 'choose --csv or --json, not both', 'usage: rastro replay diff'],
      [['sweep', 'now'], 'unexpected argument "now" for rastro sweep', 'usage: rastro sweep'],
      [['inbox', 'dead-letters', '--limit', '1.5'], '--limit must be a whole number of at least 1, got "1.5"', 'usage: rastro inbox dead-letters'],
    ];
    await inBatches(cases, async ([args, message, usage]) => {
      const result = await rastro(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.split('\n')[0]).toBe(`rastro: ${message}`);
      expect(result.stderr).toContain(usage);
      expect(result.stderr).not.toMatch(/\n\s+at |ECONNREFUSED|CommanderError/);
    });
  });
});
