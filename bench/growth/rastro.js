// The growth section's one contender: both logs built in one process and measured in
// alternating turns (bench/growth/workload.js).
import { runContender } from '../shared/contender.js';
import { runGrowth } from './workload.js';

await runContender(() => runGrowth());
