import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommissionStory } from '../demo/commission-story.js';
import { runOrderStory } from '../demo/order-story.js';
import { runChargeStory } from '../demo/charge-story.js';

/** `rastro demo commission`: the seed's story on a fresh embedded database. */
export async function runCommissionDemo(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'rastro-demo-'));
  console.log(`commission story on an embedded database in ${dir}\n`);
  try {
    const report = await runCommissionStory({ url: dir, schema: 'rastro', log: (line) => console.log(line) });
    if (report.uncertainLeft > 0) console.log(`\n${report.uncertainLeft} effect(s) still uncertain`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `rastro demo orders`: seed 004's story on a fresh embedded database. */
export async function runOrderDemo(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'rastro-demo-'));
  console.log(`order story on an embedded database in ${dir}\n`);
  try {
    const report = await runOrderStory({ url: dir, log: (line) => console.log(line) });
    console.log(`\n${report.alerts.length} alert(s) in all: only the real cancellation`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `rastro demo charges`: seed 002's story on a fresh embedded database. */
export async function runChargeDemo(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'rastro-demo-'));
  console.log(`charge story on an embedded database in ${dir}\n`);
  try {
    await runChargeStory({ dataDir: dir, log: (line) => console.log(line) });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
