// Raw baseline: the load rows against bench/http-api/raw-server.js (node:http + pg).
import { runContender } from '../shared/contender.js';
import { startServerChild } from '../shared/server-child.js';
import { runLoad } from './workload.js';

await runContender(async () => {
  const server = await startServerChild(new URL('./raw-server.js', import.meta.url));
  try {
    return await runLoad(server.info.url);
  } finally {
    await server.close();
  }
});
