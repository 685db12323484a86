import { defineConfig } from 'vitest/config';

const GAP_TEST = 'test/store/gap.test.ts';
const LATE_COMMIT_TEST = 'test/intake/late-commit.test.ts';
const shared = { testTimeout: 60_000, hookTimeout: 60_000, pool: 'forks' as const };

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    projects: [
      { test: { ...shared, name: 'suites', include: ['test/**/*.test.ts'], exclude: [GAP_TEST, LATE_COMMIT_TEST], sequence: { groupOrder: 0 } } },
      // Alone, after the others: its transactions, held open for seconds, hold back every reader
      // in the cluster and would slow the other suites' live runs and replays.
      { test: { ...shared, name: 'gap', include: [GAP_TEST], sequence: { groupOrder: 1 } } },
      // Also alone: it holds a transaction open through many normalizer rounds.
      { test: { ...shared, name: 'late-commit', include: [LATE_COMMIT_TEST], sequence: { groupOrder: 2 } } },
    ],
  },
});
