// What an application installs: the packages given, in a fresh project of their own, with npm
// from the registry (and rastro's workspace packages from their tarballs), measured on disk.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Bytes on disk under `path`, in allocated blocks as `du` counts them. */
function diskBytes(path) {
  let bytes = 0;
  for (const entry of readdirSync(path, { withFileTypes: true, recursive: true })) {
    const stat = statSync(join(entry.parentPath ?? entry.path, entry.name), { throwIfNoEntry: false });
    if (stat?.isFile()) bytes += stat.blocks * 512;
  }
  return bytes;
}

/** Packs workspace packages (`rastro`, `rastro-server`) into `dir`; returns their tarballs. */
function pack(workspaces, dir) {
  const output = execFileSync('npm', ['pack', ...workspaces.flatMap((w) => ['-w', w]), '--pack-destination', dir, '--json'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return JSON.parse(output).map((entry) => join(dir, entry.filename));
}

/**
 * Installs `packages` (registry specs) and the tarballs of `workspaces` into a new project and
 * returns the size of its node_modules, in MB, and how many packages it holds.
 */
export function installedSize({ workspaces = [], packages = [] }) {
  const dir = mkdtempSync(join(tmpdir(), 'rastro-install-'));
  try {
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    const tarballs = pack(workspaces, dir);
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', ...tarballs, ...packages], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    const modules = join(dir, 'node_modules');
    const count = readdirSync(modules).flatMap((name) => (name.startsWith('@') ? readdirSync(join(modules, name)) : name.startsWith('.') ? [] : [name])).length;
    return { mb: diskBytes(modules) / 1e6, packages: count };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
