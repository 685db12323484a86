import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The built command. */
export const CLI = join(import.meta.dirname, '../../packages/server/dist/cli/main.js');

/** Runs `rastro <args>` with `env` over the test's environment; a failure is a result, not a throw. */
export async function runRastro(args: string[], env: Record<string, string | undefined>): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const failed = err as { stdout: string; stderr: string; code: number };
    return { stdout: failed.stdout, stderr: failed.stderr, code: failed.code };
  }
}
