// Emmett on PostgreSQL, as its documentation installs it: its two packages.
import { runContender } from '../shared/contender.js';
import { installedSize } from './measure.js';

await runContender(async () => installedSize({ packages: ['@event-driven-io/emmett@0.42.0', '@event-driven-io/emmett-postgresql@0.42.0'] }));
