import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// What the compiler checks for a user of the typed API: test/types/typed-api.ts must compile
// with no error, and each file of test/types/fails must fail with the one error its first line
// names (`// expect TS<code>: <part of the message>`).

const ROOT = join(import.meta.dirname, '..', '..');
const TYPES = join(ROOT, 'test', 'types');
const FAILS = join(TYPES, 'fails');

function compile(files: string[]): Map<string, ts.Diagnostic[]> {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const program = ts.createProgram(files, { ...options, noEmit: true });
  const byFile = new Map<string, ts.Diagnostic[]>(files.map((file) => [file, []]));
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const file = diagnostic.file?.fileName ?? '(global)';
    (byFile.get(file) ?? byFile.set(file, []).get(file)!).push(diagnostic);
  }
  return byFile;
}

const describeDiagnostic = (d: ts.Diagnostic) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;

describe('the typed API at compile time', () => {
  const fails = readdirSync(FAILS).filter((name) => name.endsWith('.ts')).map((name) => join(FAILS, name));
  const valid = [join(TYPES, 'typed-api.ts')];
  // One program for all of them: each file's errors are its own.
  const diagnostics = compile([...valid, ...fails]);

  it('compiles typed appends, reads, handlers, effects and policies with no cast', () => {
    const errors = [...diagnostics].filter(([file]) => !file.startsWith(FAILS)).flatMap(([, list]) => list.map(describeDiagnostic));
    expect(errors).toEqual([]);
  });

  it.each(fails.map((file) => [file.slice(FAILS.length + 1), file]))('refuses %s', (_name, file) => {
    const expected = /^\/\/ expect TS(\d+): (.+)$/m.exec(readFileSync(file, 'utf8'));
    expect(expected, 'the file names its expected error').not.toBeNull();
    const found = (diagnostics.get(file) ?? []).map(describeDiagnostic);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(`TS${expected![1]}:`);
    expect(found[0]).toContain(expected![2]);
  });
});
