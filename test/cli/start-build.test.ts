import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const UP_TO_DATE = 'dist/ is up to date with src/: no build needed';

/**
 * npm start's prestart (`scripts/build.mjs --if-changed`) on a one-file project of the same shape
 * (the script, a workspace package with its src/, the tsconfigs, the package.json files, the real
 * TypeScript), so each build is quick.
 */
describe("npm start's build only when a source changed", () => {
  let project: string;
  const build = () => execFileSync(process.execPath, ['scripts/build.mjs', '--if-changed'], { cwd: project, encoding: 'utf8' });
  const pkg = (...path: string[]) => join(project, 'packages', 'tip', ...path);
  const built = () => readFileSync(pkg('dist', 'tip.js'), 'utf8');
  const write = (file: string, text: string) => writeFileSync(pkg('src', file), text);

  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), 'rastro-build-'));
    mkdirSync(join(project, 'scripts'));
    mkdirSync(pkg('src'), { recursive: true });
    copyFileSync(join(ROOT, 'scripts', 'build.mjs'), join(project, 'scripts', 'build.mjs'));
    copyFileSync(join(ROOT, 'tsconfig.base.json'), join(project, 'tsconfig.base.json'));
    copyFileSync(join(ROOT, 'packages', 'rastro', 'tsconfig.build.json'), pkg('tsconfig.build.json'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'tip-workspace', private: true, type: 'module', workspaces: ['packages/tip'] }));
    writeFileSync(pkg('package.json'), JSON.stringify({ name: 'tip', type: 'module' }));
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
    utimesSync(pkg('src', 'tip.ts'), new Date('2000-01-01'), new Date('2000-01-01'));
    expect(build()).not.toContain(UP_TO_DATE);
    expect(built()).toContain('cents = 200');
    expect(build()).toContain(UP_TO_DATE);
  });

  it('rebuilds after a source is deleted, and leaves no output of it behind', () => {
    write('gone.ts', 'export const gone = true;\n');
    build();
    rmSync(pkg('src', 'gone.ts'));
    expect(build()).not.toContain(UP_TO_DATE);
    expect(() => readFileSync(pkg('dist', 'gone.js'))).toThrow();
  });

  it('rebuilds when dist/ was changed or rebuilt by something else', () => {
    writeFileSync(pkg('dist', 'tip.js'), 'export const cents = -1;\n');
    expect(build()).not.toContain(UP_TO_DATE);
    expect(built()).toContain('cents = 200');
  });

  it('rebuilds when a tsconfig changed', () => {
    const tsconfig = join(project, 'tsconfig.base.json');
    writeFileSync(tsconfig, readFileSync(tsconfig, 'utf8').replace('"sourceMap": true', '"sourceMap": false'));
    expect(build()).not.toContain(UP_TO_DATE);
    expect(() => readFileSync(pkg('dist', 'tip.js.map'))).toThrow();
  });
});
