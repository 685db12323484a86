import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseInUseError } from '../errors.js';

/** Opens of each folder in this process: one process may open its folder more than once. */
const held = new Map<string, number>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, it is another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function holder(lock: string): number | undefined {
  try {
    const pid = Number(readFileSync(lock, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Marks PGlite's `folder` as open by this process, in `<folder>.lock` (beside the folder, which
 * PGlite wants to itself), and returns what unmarks it. PGlite runs the database inside the
 * process that opens it, so two processes on one folder would corrupt it: while the process in
 * the lock lives, another one is refused with {@link DatabaseInUseError}. A lock left by a
 * process that is gone (killed) is taken over.
 */
export function lockDataDir(folder: string): () => void {
  const path = resolve(folder);
  const lock = `${path}.lock`;
  const opens = held.get(path) ?? 0;
  if (opens === 0) {
    mkdirSync(dirname(lock), { recursive: true });
    for (;;) {
      try {
        writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const pid = holder(lock);
      if (pid !== undefined && pid !== process.pid && alive(pid)) throw new DatabaseInUseError(folder, pid);
      // Its process is gone: take it over (a rival doing the same at once loses on 'wx').
      try {
        unlinkSync(lock);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }
  held.set(path, opens + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (held.get(path) ?? 1) - 1;
    if (left > 0) return void held.set(path, left);
    held.delete(path);
    if (holder(lock) === process.pid) unlinkSync(lock);
  };
}
