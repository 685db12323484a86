#!/usr/bin/env node
import { runCli } from './run-cli.js';

// A reader that went away (`rastro --help | head`) ends the output, not with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

/** Resolves once everything written to the stream before it has been handed to the system. */
const flushed = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => (stream.writable ? stream.write('', () => resolve()) : resolve()));

// Exit on failure (a stopped relay or pool must not keep the process up) once what was printed
// is out: `rastro audit --json` that found something prints a long report, then exits 1. On
// success let the event loop drain, so stdout is flushed and servers keep running.
runCli(process.argv.slice(2)).then(async (code) => {
  if (code === 0) return;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
});
