// rastro through its public API, built into dist/.
import { runContender } from '../shared/contender.js';
import { openRastro } from './open-rastro.js';
import { runEventStoreWorkload } from './workload.js';

await runContender(async (run) => runEventStoreWorkload(await openRastro(run)));
