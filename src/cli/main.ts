#!/usr/bin/env node
import { runCli } from './run-cli.js';

// Exit at once on failure (a stopped relay or pool must not keep the process up); on success
// let the event loop drain, so stdout is flushed and servers keep running.
runCli(process.argv.slice(2)).then((code) => {
  if (code !== 0) process.exit(code);
});
