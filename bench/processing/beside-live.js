// A live run beside a replay of 1,000,000 events, and that replay in one process against two.
//
// One process (this one) appends one `order.placed` event every few milliseconds and runs the
// live processor that handles them, so both ends of each event's journey read one clock:
// append latency is the `store.append` call, commit-to-handled the time from the append
// resolving (its commit) to the live handler receiving the event. First with nothing else
// running, then while a replay of the schema's 1,000,000 paid orders runs in a process of its
// own with `runReplay`'s defaults. Then the same events are replayed again by one process and
// by two processes sharing one run id, twice each, in the order one, two, two, one.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { defineProcessor, runLive } from 'rastro';
import { runContender } from '../shared/contender.js';
import { BESIDE_LIVE, openFilledStore } from './workload.js';

const CHILD = fileURLToPath(new URL('./replay-child.js', import.meta.url));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Replays run `runId` in `processes` child processes; resolves with events/s from the first start to the last end. */
function replayIn(schema, runId, processes, onStarted) {
  const children = Array.from({ length: processes }, () => new Promise((resolve, reject) => {
    const child = fork(CHILD, [schema, runId], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let done;
    child.on('message', (message) => {
      if (message.started) onStarted?.();
      if (message.done) done = message.done;
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 && done ? resolve(done) : reject(new Error(`replay process of ${runId} exited with code ${code}`))));
  }));
  return Promise.all(children).then((ends) => {
    if (ends.some((end) => end.events !== BESIDE_LIVE.events)) throw new Error(`run ${runId} handled ${ends.map((end) => end.events).join(', ')} events`);
    const seconds = (Math.max(...ends.map((end) => end.endedAt)) - Math.min(...ends.map((end) => end.startedAt))) / 1000;
    return BESIDE_LIVE.events / seconds;
  });
}

await runContender(async (run) => {
  const schema = `bench_beside_${run}`;
  const filled = await openFilledStore(schema, BESIDE_LIVE.events);
  const { store } = filled;
  const handledAt = new Map();
  const live = defineProcessor({
    name: 'bench-live',
    handlers: {
      'order.placed': async (event, ctx) => {
        handledAt.set(event.data.seq, performance.now());
        await ctx.upsert('placed', String(event.data.seq), { seq: event.data.seq }, { version: event.streamVersion });
      },
    },
  });
  let seq = 0;
  const append = async () => {
    seq += 1;
    const started = performance.now();
    await store.append(`placed-${seq}`, [{ type: 'order.placed', data: { seq } }]);
    return { seq, started, committed: performance.now() };
  };
  // The first read of the live run passes the million paid orders once: done before it is measured.
  await append();
  const runner = await runLive(live, { store, policy: {} });
  try {
    const caughtUp = async (last) => {
      const deadline = Date.now() + 60_000;
      while (!handledAt.has(last)) {
        if (Date.now() > deadline) throw new Error(`the live run did not handle event ${last} within 60 s`);
        await sleep(5);
      }
    };
    await caughtUp(seq);

    /** Appends one event every BESIDE_LIVE.intervalMs until `until` resolves; then the latencies. */
    const measure = async (until) => {
      const samples = [];
      let stop = false;
      until.then(() => (stop = true), () => (stop = true));
      while (!stop) {
        samples.push(await append());
        await sleep(BESIDE_LIVE.intervalMs);
      }
      await caughtUp(seq);
      return {
        samples: samples.length,
        appendP50: percentile(samples.map((s) => s.committed - s.started), 50),
        appendP99: percentile(samples.map((s) => s.committed - s.started), 99),
        liveP50: percentile(samples.map((s) => handledAt.get(s.seq) - s.committed), 50),
        liveP99: percentile(samples.map((s) => handledAt.get(s.seq) - s.committed), 99),
      };
    };

    const idle = await measure(sleep(BESIDE_LIVE.idleMs));
    let started;
    const replayStarted = new Promise((resolve) => (started = resolve));
    const replaying = replayIn(schema, 'beside', 1, started);
    replaying.catch(() => undefined);
    await replayStarted;
    const beside = await measure(replaying);
    const besideRate = await replaying;
    if (beside.samples < 200) throw new Error(`only ${beside.samples} appends while the replay ran`);
    await runner.stop();

    // Setup, not measured: the rows the replay wrote, vacuumed and analyzed, as autovacuum leaves them.
    await filled.settle(['projections']);
    // Two of each, in the order one, two, two, one: neither always meets the machine as the
    // other left it, and each run's figure is the mean of two.
    const rates = { 1: [], 2: [] };
    for (const [index, processes] of [1, 2, 2, 1].entries()) rates[processes].push(await replayIn(schema, `scale-${index}`, processes));
    const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length;
    const oneProcess = mean(rates[1]);
    const twoProcesses = mean(rates[2]);
    return {
      liveIdleP50: idle.liveP50, liveIdleP99: idle.liveP99, appendIdleP50: idle.appendP50, appendIdleP99: idle.appendP99,
      liveBesideP50: beside.liveP50, liveBesideP99: beside.liveP99, appendBesideP50: beside.appendP50, appendBesideP99: beside.appendP99,
      besideSamples: beside.samples, replayBeside: besideRate, replayOne: oneProcess, replayTwo: twoProcesses,
    };
  } finally {
    await runner.stop().catch(() => undefined);
    await filled.close();
  }
});
