#!/usr/bin/env node
// Builds each workspace package's dist/ from its src/ with tsc, in the order package.json lists
// the workspaces (the library before the server, whose build reads the library's types). With
// --if-changed (npm start's prestart) it builds a package only when its dist/ is not the output
// of its current inputs, so a start right after `npm install` (whose prepare just built) answers
// at once instead of waiting for a second tsc.
//
// "Current" is decided by content, never by clock: the stamp written after each build holds a
// digest of every input (the package's src/, tsconfig.build.json and package.json, the shared
// tsconfig, the TypeScript version, and the packages built before it) and of every file the
// build left in dist/. Any edit, added or deleted source, a build by plain tsc or a touched
// dist/ file changes one of the two digests, and the next start rebuilds.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGES = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).workspaces;

function filesUnder(path) {
  if (!existsSync(path)) return [];
  const entries = readdirSync(path, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

/** A digest of the files' names and contents, in a stable order. */
function digest(paths) {
  const hash = createHash('sha256');
  for (const path of paths.sort()) hash.update(relative(ROOT, path)).update('\0').update(readFileSync(path)).update('\0');
  return hash.digest('hex');
}

/** What a package's build reads: its own sources and settings, and the sources of the packages before it. */
function inputFiles(index) {
  const shared = ['tsconfig.base.json', 'node_modules/typescript/package.json'].map((name) => join(ROOT, name)).filter(existsSync);
  const own = PACKAGES.slice(0, index + 1).flatMap((pkg) => [
    ...filesUnder(join(ROOT, pkg, 'src')),
    ...['tsconfig.build.json', 'package.json'].map((name) => join(ROOT, pkg, name)).filter(existsSync),
  ]);
  return [...shared, ...own];
}

function buildPackage(pkg, index, ifChanged) {
  const dist = join(ROOT, pkg, 'dist');
  const stamp = join(dist, '.build-stamp.json');
  const outputsDigest = () => digest(filesUnder(dist).filter((path) => path !== stamp));
  const inputs = digest(inputFiles(index));
  if (ifChanged && existsSync(stamp)) {
    try {
      const stamped = JSON.parse(readFileSync(stamp, 'utf8'));
      if (stamped.inputs === inputs && stamped.outputs === outputsDigest()) return false;
    } catch {
      // An unreadable stamp is a reason to build.
    }
  }
  rmSync(stamp, { force: true });
  // dist/ is written over in place, never emptied first: a process started from it meanwhile
  // (a test, a second start) still finds every file.
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, pkg, 'tsconfig.build.json'), '--listEmittedFiles'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const emitted = new Set();
  for (const line of tsc.stdout.split('\n')) {
    if (line.startsWith('TSFILE: ')) emitted.add(resolve(line.slice('TSFILE: '.length)));
    else if (line) console.log(line);
  }
  if (tsc.status !== 0) {
    // No stamp: the next start tries again rather than serve a half-built dist/.
    process.exit(tsc.status ?? 1);
  }
  removeStale(dist, emitted);
  writeFileSync(stamp, `${JSON.stringify({ inputs, outputs: outputsDigest() })}\n`);
  return true;
}

/** Removes what the build did not write: the output of a deleted source must not linger and be imported. */
function removeStale(dist, emitted) {
  for (const path of filesUnder(dist)) if (!emitted.has(path)) rmSync(path);
  for (const entry of readdirSync(dist, { withFileTypes: true, recursive: true }).reverse()) {
    const path = join(entry.parentPath ?? entry.path, entry.name);
    if (entry.isDirectory() && readdirSync(path).length === 0) rmSync(path, { recursive: true });
  }
}

const ifChanged = process.argv.includes('--if-changed');
const built = PACKAGES.filter((pkg, index) => buildPackage(pkg, index, ifChanged));
if (ifChanged && built.length === 0) console.log('dist/ is up to date with src/: no build needed');
