// The command and server, as an operator installs it: rastro-server, which brings the library.
import { runContender } from '../shared/contender.js';
import { installedSize } from './measure.js';

await runContender(async () => installedSize({ workspaces: ['rastro', 'rastro-server'] }));
