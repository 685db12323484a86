import { basename } from 'node:path';
import { poolFailure } from './pools.js';

/** The contender this process runs: its script's name, as in its section (`emmett`, `raw`, ...). */
export const contenderName = basename(process.argv[1] ?? 'contender', '.js');

/** Hands `message` to bench/run.js, if it started this process, and waits until it is sent. */
function tell(message) {
  if (!process.send || !process.connected) return Promise.resolve();
  return new Promise((resolve) => process.send(message, () => resolve()));
}

let failing;
/**
 * Prints why the contender failed, hands the reason to bench/run.js and ends the process with
 * exit code 1, whatever is still open.
 */
function fail(err) {
  failing ??= (async () => {
    console.error(`contender ${contenderName}: ${describeError(err)}`);
    await tell({ error: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  })();
  return failing;
}

/**
 * The body of a contender's child process: runs `measure`, hands its results to bench/run.js
 * over IPC (or prints them when started by hand), and exits non-zero on failure: when `measure`
 * throws, when a guarded pool (bench/shared/pools.js) reports an error while it is at work, or
 * on any uncaught error.
 */
export async function runContender(measure) {
  process.on('uncaughtException', fail);
  process.on('unhandledRejection', fail);
  try {
    const results = await Promise.race([measure(Number(process.argv[2] ?? 1)), poolFailure]);
    if (!process.send) {
      console.log(JSON.stringify(results, null, 2));
      return;
    }
    await new Promise((resolve, reject) => process.send({ results }, (err) => (err ? reject(err) : resolve())));
    process.disconnect();
  } catch (err) {
    await fail(err);
  }
}

/** The stack and causes only: drivers attach whole connection objects to their errors. */
export function describeError(err) {
  const lines = [];
  for (let current = err; current; current = current.cause) {
    lines.push(current instanceof Error ? `${current.stack}${current.code ? ` (code ${current.code})` : ''}` : String(current));
  }
  return lines.join('\ncaused by: ');
}
