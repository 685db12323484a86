import { describe, expect, it } from 'vitest';
import { csv } from '../../packages/server/src/operations/csv.js';

describe('CSV', () => {
  it('neutralizes every cell a spreadsheet would run as a formula, as OWASP prescribes', () => {
    const cells = ['=HYPERLINK("http://evil.example","x")', '+1+1', '-2+3', '@SUM(A1)', '\tcmd', '\r=1'];
    const out = csv(['cell'], cells.map((cell) => [cell])).split('\r\n').slice(1).join('\n');
    expect(out).toBe(['"\'=HYPERLINK(""http://evil.example"",""x"")"', '"\'+1+1"', '"\'-2+3"', '"\'@SUM(A1)"', '"\'\tcmd"', '"\'\r=1"'].join('\n'));
  });

  it('keeps numbers, plain text, JSON and empty cells as RFC 4180 has them', () => {
    expect(csv(['a', 'b', 'c', 'd', 'e'], [[-5, 'plain', { x: '=1' }, null, 'a,"b"']])).toBe('a,b,c,d,e\r\n-5,plain,"{""x"":""=1""}",,"a,""b"""');
  });
});
