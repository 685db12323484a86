import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { commissionProcessor } from '../demo/commission.js';
import { sellerNotifierClient } from '../demo/seller-notifier.js';
import { ConfigError } from 'rastro/internal/errors.js';
import type { Processor } from 'rastro/internal/processing/processor.js';

/** What a processors module or rastro.config.js exports (default export or named `processors`). */
interface ProcessorsModule {
  default?: { processors?: Processor[] } | Processor[];
  processors?: Processor[];
}

async function importModule(path: string): Promise<ProcessorsModule> {
  if (!path.endsWith('.ts')) return (await import(pathToFileURL(path).href)) as ProcessorsModule;
  // Node 20 cannot import TypeScript: transpile it with the project's TypeScript, if it has one.
  let ts: typeof import('typescript');
  try {
    ts = (await import('typescript')).default;
  } catch {
    throw new ConfigError(`${path} is TypeScript: install typescript in the project, or use a .js config`);
  }
  const output = ts.transpileModule(await readFile(path, 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
  const file = join(await mkdtemp(join(tmpdir(), 'rastro-config-')), 'config.mjs');
  await writeFile(file, output.outputText);
  return (await import(pathToFileURL(file).href)) as ProcessorsModule;
}

/** The built-in processors: the commission story's, notifying the seller at RASTRO_DEMO_NOTIFIER_URL. */
function builtIn(): Processor[] {
  const url = process.env.RASTRO_DEMO_NOTIFIER_URL ?? 'http://127.0.0.1:4010';
  return [commissionProcessor(sellerNotifierClient(url))];
}

/**
 * Loads processors from `--processors <path>`, else from rastro.config.js / .ts in the working
 * directory; the built-in demo processor is always available.
 */
export async function loadProcessors(path?: string): Promise<Map<string, Processor>> {
  const candidates = path ? [resolve(path)] : ['rastro.config.js', 'rastro.config.mjs', 'rastro.config.ts'].map((name) => resolve(name));
  const file = candidates.find((candidate) => existsSync(candidate));
  if (path && !file) throw new ConfigError(`no processors module at ${path}`);
  const loaded: Processor[] = [];
  if (file) {
    const mod = await importModule(file);
    const exported = mod.processors ?? (Array.isArray(mod.default) ? mod.default : mod.default?.processors);
    if (!Array.isArray(exported)) throw new ConfigError(`${file} must export processors: an array of defineProcessor(...) results`);
    loaded.push(...exported);
  }
  const byName = new Map(builtIn().map((processor) => [processor.name, processor]));
  for (const processor of loaded) byName.set(processor.name, processor);
  return byName;
}

/** The processor `name` of `processors`, or a {@link ConfigError} naming the known ones. */
export function processorNamed(processors: ReadonlyMap<string, Processor>, name: string | undefined): Processor {
  const processor = name ? processors.get(name) : undefined;
  if (!processor) throw new ConfigError(`unknown processor ${JSON.stringify(name ?? '')}; known: ${[...processors.keys()].join(', ')}`);
  return processor;
}

/** The processor `name` of those {@link loadProcessors} loads from `path`. */
export async function findProcessor(name: string | undefined, path?: string): Promise<Processor> {
  return processorNamed(await loadProcessors(path), name);
}
