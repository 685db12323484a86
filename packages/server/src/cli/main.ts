#!/usr/bin/env node
import { runCli } from './run-cli.js';

// A reader that went away (`rastro --help | head`) ends the output, not with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

// Exit at once on failure (a stopped relay or pool must not keep the process up); on success
// let the event loop drain, so stdout is flushed and servers keep running.
runCli(process.argv.slice(2)).then((code) => {
  if (code !== 0) process.exit(code);
});
