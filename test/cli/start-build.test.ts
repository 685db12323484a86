import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const UP_TO_DATE = 'dist/ is up to date with src/: no build needed';

/**
 * npm start's prestart (`scripts/build.mjs --if-changed`) on a one-file project of the same shape
 * (the script, src/, the tsconfigs, package.json, the real TypeScript), so each build is quick.
 */
describe("npm start's build only when a source changed", () => {
  let project: string;
  const build = () => execFileSync(process.execPath, ['scripts/build.mjs', '--if-changed'], { cwd: project, encoding: 'utf8' });
  const built = () => readFileSync(join(project, 'dist', 'tip.js'), 'utf8');
  const write = (file: string, text: string) => writeFileSync(join(project, 'src', file), text);

  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), 'rastro-build-'));
    mkdirSync(join(project, 'scripts'));
    mkdirSync(join(project, 'src'));
    copyFileSync(join(ROOT, 'scripts', 'build.mjs'), join(project, 'scripts', 'build.mjs'));
    for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package.json']) copyFileSync(join(ROOT, file), join(project, file));
    symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'));
    write('tip.ts', 'export const cents = 100;\n');
  });
  afterAll(() => rmSync(project, { recursive: true, force: true }));

  it('builds once, then starts without building while nothing changed', () => {
    expect(build()).not.toContain(UP_TO_DATE);
    expect(built()).toContain('cents = 100');
    expect(build()).toContain(UP_TO_DATE);
  });

  it('rebuilds after an edit, even one that keeps an old modification time', () => {
    write('tip.ts', 'export const cents = 200;\n');
    // A file restored with its old time (cp -p, tar, some checkouts) must still count.
    utimesSync(join(project, 'src', 'tip.ts'), new Date('2000-01-01'), new Date('2000-01-01'));
    expect(build()).not.toContain(UP_TO_DATE);
    expect(built()).toContain('cents = 200');
    expect(build()).toContain(UP_TO_DATE);
  });

  it('rebuilds after a source is deleted, and leaves no output of it behind', () => {
    write('gone.ts', 'export const gone = true;\n');
    build();
    rmSync(join(project, 'src', 'gone.ts'));
    expect(build()).not.toContain(UP_TO_DATE);
    expect(() => readFileSync(join(project, 'dist', 'gone.js'))).toThrow();
  });

  it('rebuilds when dist/ was changed or rebuilt by something else', () => {
    writeFileSync(join(project, 'dist', 'tip.js'), 'export const cents = -1;\n');
    expect(build()).not.toContain(UP_TO_DATE);
    expect(built()).toContain('cents = 200');
  });

  it('rebuilds when a tsconfig changed', () => {
    const tsconfig = join(project, 'tsconfig.json');
    writeFileSync(tsconfig, readFileSync(tsconfig, 'utf8').replace('"sourceMap": true', '"sourceMap": false'));
    expect(build()).not.toContain(UP_TO_DATE);
    expect(() => readFileSync(join(project, 'dist', 'tip.js.map'))).toThrow();
  });
});
