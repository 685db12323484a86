// The library alone, as a service installs it: `npm install rastro pg`.
import { runContender } from '../shared/contender.js';
import { installedSize } from './measure.js';

await runContender(async () => installedSize({ workspaces: ['rastro'], packages: ['pg@8.23.1'] }));
