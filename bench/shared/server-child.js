// A server under test runs in a process of its own, so the load generator does not share its
// event loop. The parent forks it with `startServerChild` and gets `ready` info (its URL) over
// IPC, may ask it to run one of its `commands`, and tells it to close; the child runs
// `serveChild(start)` and tears its server down when told to close or when the parent goes away.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describeError } from './contender.js';
import { poolFailure } from './pools.js';

/**
 * `BENCH_SERVER_CPU_PROF=<dir>` writes a V8 CPU profile of every server child into <dir>
 * (open it in Chrome DevTools); `BENCH_SERVER_NODE_ARGS` adds other node flags.
 */
function serverExecArgv() {
  const args = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  if (process.env.BENCH_SERVER_CPU_PROF) args.push('--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVER_CPU_PROF}`);
  return args;
}

/** Forks `script` with `options` and resolves once it reports ready: `{ info, command(name), close() }`. */
export function startServerChild(script, options = {}) {
  const child = fork(fileURLToPath(script), [JSON.stringify(options)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: serverExecArgv(),
  });
  const pending = new Map();
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      for (const { reject } of pending.values()) reject(new Error(`server child ended (${signal ?? `exit code ${code}`}) during a command`));
      resolve({ code, signal });
    }),
  );
  let nextId = 0;
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (message) => {
      if (message?.reply !== undefined) {
        const { resolve: done, reject: fail } = pending.get(message.reply);
        pending.delete(message.reply);
        return message.error ? fail(new Error(`server command failed: ${message.error}`)) : done(message.result);
      }
      if (!message?.ready) return;
      resolve({
        info: message.ready,
        command(name) {
          const id = (nextId += 1);
          return new Promise((done, fail) => {
            pending.set(id, { resolve: done, reject: fail });
            child.send({ command: name, id });
          });
        },
        async close() {
          if (child.connected) child.send('close');
          const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
          const { code, signal } = await exited;
          clearTimeout(timer);
          if (code !== 0) throw new Error(`server child ${script.pathname.split('/').pop()} ended with ${signal ?? `exit code ${code}`}`);
        },
      });
    });
    exited.then(({ code, signal }) => reject(new Error(`server child ${script.pathname.split('/').pop()} ended before it was ready (${signal ?? `exit code ${code}`}); its error is printed above`)));
  });
}

/**
 * The body of a server child: `start(options)` returns `{ info, commands, close() }`; `info` goes
 * to the parent, `commands[name]()` runs when the parent asks, `close()` when the parent says so
 * (or disappears), then the process exits.
 */
export async function serveChild(start) {
  // A guarded pool failing while the server is at work ends the child; the parent's requests fail.
  poolFailure.catch((err) => {
    console.error(describeError(err));
    process.exit(1);
  });
  let server;
  try {
    server = await start(JSON.parse(process.argv[2] ?? '{}'));
  } catch (err) {
    console.error(describeError(err));
    process.exit(1);
  }
  let closing;
  const shutdown = () =>
    (closing ??= server.close().then(
      () => process.exit(0),
      (err) => {
        console.error(describeError(err));
        process.exit(1);
      },
    ));
  process.on('message', (message) => {
    if (message === 'close') return shutdown();
    if (message?.command === undefined) return;
    const run = server.commands?.[message.command];
    Promise.resolve()
      .then(() => (run ? run() : Promise.reject(new Error(`no command ${message.command}`))))
      .then(
        (result) => process.send({ reply: message.id, result }),
        (err) => process.send({ reply: message.id, error: err.message }),
      );
  });
  process.on('disconnect', shutdown);
  process.send({ ready: server.info });
}
