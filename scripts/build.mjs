#!/usr/bin/env node
// Builds dist/ from src/ with tsc. With --if-changed (npm start's prestart) it builds only when
// dist/ is not the output of the current inputs, so a start right after `npm install` (whose
// prepare just built) answers at once instead of waiting for a second tsc.
//
// "Current" is decided by content, never by clock: the stamp written after each build holds a
// digest of every input (src/, the tsconfigs, package.json, the TypeScript version) and of
// every file the build left in dist/. Any edit, added or deleted source, a build by plain tsc
// or a touched dist/ file changes one of the two digests, and the next start rebuilds.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const STAMP = join(DIST, '.build-stamp.json');
const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'node_modules/typescript/package.json'];

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

const inputsDigest = () => digest(INPUTS.flatMap((name) => {
  const path = join(ROOT, name);
  return name === 'src' ? filesUnder(path) : existsSync(path) ? [path] : [];
}));
const outputsDigest = () => digest(filesUnder(DIST).filter((path) => path !== STAMP));

function upToDate() {
  if (!existsSync(STAMP)) return false;
  try {
    const stamp = JSON.parse(readFileSync(STAMP, 'utf8'));
    return stamp.inputs === inputsDigest() && stamp.outputs === outputsDigest();
  } catch {
    return false;
  }
}

/** Removes what the build did not write: the output of a deleted source must not linger and be imported. */
function removeStale(emitted) {
  for (const path of filesUnder(DIST)) if (!emitted.has(path)) rmSync(path);
  for (const entry of readdirSync(DIST, { withFileTypes: true, recursive: true }).reverse()) {
    const path = join(entry.parentPath ?? entry.path, entry.name);
    if (entry.isDirectory() && readdirSync(path).length === 0) rmSync(path, { recursive: true });
  }
}

function build() {
  rmSync(STAMP, { force: true });
  const inputs = inputsDigest();
  // dist/ is written over in place, never emptied first: a process started from it meanwhile
  // (a test, a second start) still finds every file.
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--listEmittedFiles'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const emitted = new Set();
  for (const line of tsc.stdout.split('\n')) {
    if (line.startsWith('TSFILE: ')) emitted.add(resolve(line.slice('TSFILE: '.length)));
    else if (line) console.log(line);
  }
  if (tsc.status !== 0) {
    // No stamp: the next start tries again rather than serve a half-built dist/.
    process.exit(tsc.status ?? 1);
  }
  removeStale(emitted);
  writeFileSync(STAMP, `${JSON.stringify({ inputs, outputs: outputsDigest() })}\n`);
}

if (process.argv.includes('--if-changed') && upToDate()) {
  console.log('dist/ is up to date with src/: no build needed');
} else {
  build();
}
