// The acquirer: rastro's real-HTTP acquirer fake (`startAcquirerFake` from dist/) in a process of
// its own, so its event loop is not the server's. No delay and no faults: every capture is made
// and answered at once, every lookup of a captured key answers `captured`. The parent can ask it
// for its `stats` (requests served, captures standing) and the CPU time it has used.
import { startAcquirerFake } from 'rastro';
import { serveChild } from '../shared/server-child.js';

await serveChild(async () => {
  const fake = await startAcquirerFake();
  return {
    info: { url: fake.url },
    commands: {
      async stats() {
        const { user, system } = process.cpuUsage();
        return { ...fake.stats, captured: fake.captured().length, cpuMs: (user + system) / 1000 };
      },
    },
    close: () => fake.close(),
  };
});
