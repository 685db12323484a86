import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const CLI = join(import.meta.dirname, '../../packages/server/dist/cli/main.js');

/** A built `rastro` command running in a process of its own. */
export interface RastroProcess {
  /** What the test calls it, for messages. */
  role: string;
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr interleaved. */
  output(): string;
  /** What the `ready` pattern matched. */
  match: RegExpExecArray;
  exited: Promise<number | null>;
  /** SIGTERM, then its exit code. */
  stop(): Promise<number | null>;
}

/**
 * Spawns `rastro <args>` with `env` over the test's environment, and resolves once its output
 * matches `ready`; rejects, with the end of its output, if it exits before. `track` receives a
 * cleanup that kills it (SIGKILL) if the test ends while it still runs.
 */
export async function spawnRastro(role: string, args: string[], env: Record<string, string>, ready: RegExp, track: (cleanup: () => Promise<unknown>) => void): Promise<RastroProcess> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  track(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const found = ready.exec(output);
      if (found) resolve(found);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${role} (rastro ${args.join(' ')}) exited (${code}) before it was ready: ${output.slice(-1000)}`)));
  });
  return {
    role,
    child,
    output: () => output,
    match,
    exited,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
