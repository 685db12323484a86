import { defineConfig } from 'vitest/config';

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
  'test/charges/charge-crash.test.ts',
  'test/brokers/inbox-order.test.ts',
];
const shared = { testTimeout: 60_000, hookTimeout: 60_000, pool: 'forks' as const };

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    projects: [
      { test: { ...shared, name: 'suites', include: ['test/**/*.test.ts'], exclude: ALONE, sequence: { groupOrder: 0 } } },
      // After the others, one file at a time.
      { test: { ...shared, name: 'alone', include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
