/**
 * The body of a contender's child process: runs `measure`, hands its results to bench/run.js
 * over IPC (or prints them when started by hand), and exits non-zero on failure.
 */
export async function runContender(measure) {
  try {
    const results = await measure(Number(process.argv[2] ?? 1));
    if (!process.send) {
      console.log(JSON.stringify(results, null, 2));
      return;
    }
    await new Promise((resolve, reject) => process.send({ results }, (err) => (err ? reject(err) : resolve())));
    process.disconnect();
  } catch (err) {
    console.error(describeError(err));
    process.exitCode = 1;
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
