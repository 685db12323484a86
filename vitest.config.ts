import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The server's imports of the library (`rastro`, `rastro/internal/…`) resolve to the library's
// sources, the same modules the suites import: one copy of each, whichever way it is reached.
const LIBRARY = fileURLToPath(new URL('./packages/rastro/src/', import.meta.url));
const alias = [
  { find: /^rastro\/internal\/(.*)\.js$/, replacement: `${LIBRARY}$1.ts` },
  { find: /^rastro\/(nats|rabbitmq)$/, replacement: `${LIBRARY}$1.ts` },
  { find: /^rastro$/, replacement: `${LIBRARY}index.ts` },
];

// Suites that hold transactions open for seconds, or kill processes inside them: they hold back
// every reader in the cluster, and would slow or fail the other suites' reads.
const ALONE = [
  'test/store/gap.test.ts',
  'test/store/reader-delay.test.ts',
  'test/processing/replay-range.test.ts',
  'test/processing/replay-kills.test.ts',
  'test/intake/late-commit.test.ts',
  'test/outbox/relay-frontier.test.ts',
  'test/outbox/relay-scale.test.ts',
  'test/outbox/relay-crash.test.ts',
  'test/cli/serve-outage.test.ts',
  'test/deploy/roles.test.ts',
  'test/deploy/postgres-failover.test.ts',
  'test/charges/charge-crash.test.ts',
  'test/brokers/inbox-order.test.ts',
  'test/trail/seal-kills.test.ts',
  'test/brokers/nats-cluster.test.ts',
  'test/brokers/rabbitmq-cluster.test.ts',
];
const shared = { testTimeout: 60_000, hookTimeout: 60_000, pool: 'forks' as const };

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    projects: [
      { resolve: { alias }, test: { ...shared, name: 'suites', include: ['test/**/*.test.ts'], exclude: ALONE, sequence: { groupOrder: 0 } } },
      // After the others, one file at a time.
      { resolve: { alias }, test: { ...shared, name: 'alone', include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
