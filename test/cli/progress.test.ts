import { describe, expect, it } from 'vitest';
import { progressBarText, startProgress } from '../../packages/server/src/cli/progress.js';

function stream(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, writes, write: (text: string) => writes.push(text) };
}

describe('the progress line', () => {
  it('redraws one line in place on a terminal and ends it with a newline', () => {
    const tty = stream(true);
    const progress = startProgress({ stream: tty, terminalEveryMs: 0 });
    progress.show('page 1: 10 stored');
    progress.show('page 2: 20 stored');
    progress.end();
    expect(tty.writes).toEqual(['\r\x1b[2Kpage 1: 10 stored', '\r\x1b[2Kpage 2: 20 stored', '\n']);
  });

  it('writes plain lines when piped, at most one per interval, and always the last state', () => {
    const piped = stream(false);
    const progress = startProgress({ stream: piped, pipedEveryMs: 60_000 });
    for (let page = 1; page <= 5; page++) progress.show(`page ${page}`);
    progress.end();
    progress.show('page 6'); // after the end: nothing
    expect(piped.writes).toEqual(['page 1\n', 'page 5\n']);
    expect(piped.writes.join('')).not.toContain('\r');
  });

  it('redraws the last state on a terminal when it ends, even if only the rate changed', () => {
    const tty = stream(true);
    const progress = startProgress({ stream: tty, terminalEveryMs: 60_000 });
    progress.show('a', { state: 's' });
    progress.show('b', { state: 's' });
    progress.end();
    expect(tty.writes).toEqual(['\r\x1b[2Ka', '\r\x1b[2Kb', '\n']);
  });

  it('writes a message of its own above the progress line on a terminal, and as a plain line when piped', () => {
    const tty = stream(true);
    const progress = startProgress({ stream: tty, terminalEveryMs: 0 });
    progress.note('before any progress');
    progress.show('published 3');
    progress.note('rastro relay: broker down (backing off, will retry)');
    progress.end();
    expect(tty.writes.join('')).toBe('before any progress\n\r\x1b[2Kpublished 3\r\x1b[2Krastro relay: broker down (backing off, will retry)\n\r\x1b[2Kpublished 3\n');
    const piped = stream(false);
    startProgress({ stream: piped }).note('rastro relay: broker down');
    expect(piped.writes).toEqual(['rastro relay: broker down\n']);
  });

  it('does not repeat a piped line that says nothing new, unless forced', () => {
    const piped = stream(false);
    const progress = startProgress({ stream: piped, pipedEveryMs: 0 });
    progress.show('relay: published 3');
    progress.show('relay: published 3');
    progress.show('relay: published 3', { force: true });
    progress.end();
    expect(piped.writes).toEqual(['relay: published 3\n', 'relay: published 3\n']);
  });

  it('counts done of total with the rate and the time left', () => {
    expect(progressBarText(50, 100, 1000)).toBe(`[${'#'.repeat(15)}${'.'.repeat(15)}] 50/100 events  50 events/s  ETA 1s`);
    expect(progressBarText(0, 0, 10, 'rows')).toMatch(/^\[#{30}\] 0\/0 rows {2}0 rows\/s {2}ETA \?$/);
    const piped = stream(false);
    const progress = startProgress({ stream: piped });
    progress.count(4, 4);
    progress.count(4, 4); // the same count at another rate: nothing new to say
    progress.end();
    expect(piped.writes).toHaveLength(1);
    expect(piped.writes[0]).toMatch(/^\[#{30}\] 4\/4 events .* events\/s {2}ETA 0s\n$/);
  });
});
