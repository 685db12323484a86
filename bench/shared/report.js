import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';

const number = (value) => (value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1));
const ratio = (value) => `${value.toFixed(2)}×`;

/**
 * One line per row from the medians: `medians[contender][rowKey]`. A section names the
 * contender it measures (`subject`), the one it is measured against (`baseline`) and
 * optionally a `rival` it should beat.
 */
export function summarize(section, medians) {
  const { baseline, subject, rival } = section;
  return section.rows.map((row) => {
    const value = medians[subject][row.key];
    const base = medians[baseline][row.key];
    const line = { ...row, value, baseline: base, ratio: value / base };
    if (rival) {
      line.rival = medians[rival][row.key];
      line.rivalRatio = value / line.rival;
    }
    const misses = [];
    if (row.minRatio !== undefined && line.ratio < row.minRatio) misses.push(`below ${row.minRatio}× ${baseline}`);
    if (rival && line.rivalRatio < 1) misses.push(`behind ${rival}`);
    line.verdict = misses.length === 0 ? 'met' : `MISSED: ${misses.join(', ')}`;
    return line;
  });
}

function cells(section, line) {
  const target = line.minRatio === undefined ? '' : `≥ ${line.minRatio}× ${section.baseline}${section.rival ? `, > ${section.rival}` : ''}`;
  const out = [line.name, line.unit, number(line.baseline), number(line.value), ratio(line.ratio)];
  if (section.rival) out.push(number(line.rival), ratio(line.rivalRatio));
  return [...out, target, line.verdict];
}

function headers(section) {
  const { baseline, subject, rival } = section;
  const out = ['name', 'unit', baseline, subject, `${subject}/${baseline}`];
  if (rival) out.push(rival, `${subject}/${rival}`);
  return [...out, 'target', 'result'];
}

export function textTable(section, lines) {
  const rows = [headers(section), ...lines.map((line) => cells(section, line))];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  const format = (row) => row.map((cell, i) => (i < 2 || i >= row.length - 2 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [format(rows[0]), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(format)].join('\n');
}

export function markdownTable(section, lines) {
  const head = headers(section);
  const align = head.map((_, i) => (i < 2 || i >= head.length - 2 ? ':--' : '--:'));
  return [head, align, ...lines.map((line) => cells(section, line))].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

/** Replaces this section's entries in results.json and keeps other sections' entries. */
export async function writeResults(path, section, lines) {
  const previous = existsSync(path) ? JSON.parse(await readFile(path, 'utf8')) : [];
  const entries = lines.map((line) => {
    const entry = { section: section.name, name: line.name, unit: line.unit, value: line.value, baseline: line.baseline, ratio: line.ratio };
    if (section.rival) entry[section.rival] = line.rival;
    return entry;
  });
  if (section.rival) {
    for (const line of lines) {
      entries.push({ section: section.name, name: `${section.rival}: ${line.name}`, unit: line.unit, value: line.rival, baseline: line.baseline, ratio: line.rival / line.baseline });
    }
  }
  const kept = previous.filter((entry) => entry.section !== section.name);
  await writeFile(path, `${JSON.stringify([...kept, ...entries], null, 2)}\n`);
}

/** Writes `## title` and its body into the document, replacing that section when present. */
export async function writeDocSection(path, title, body) {
  const heading = `## ${title}`;
  const doc = existsSync(path) ? await readFile(path, 'utf8') : '# Benchmarks\n\nRun every section with `npm run bench`, one section with `npm run build && node bench/run.js <section>`.\n';
  const section = `${heading}\n\n${body.trim()}\n`;
  const start = doc.indexOf(`${heading}\n`);
  if (start === -1) return writeFile(path, `${doc.trimEnd()}\n\n${section}`);
  const next = doc.indexOf('\n## ', start + heading.length);
  const rest = next === -1 ? '' : `\n${doc.slice(next + 1)}`;
  await writeFile(path, `${doc.slice(0, start)}${section}${rest}`);
}
