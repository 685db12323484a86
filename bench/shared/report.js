import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';

const number = (value) => (value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1));
const ratio = (value) => `${value.toFixed(2)}×`;

/**
 * One line per row from the medians: `medians[contender][rowKey]`. A section names the
 * contender it measures (`subject`), the one it is measured against (`baseline`) and
 * optionally a `rival` it should beat.
 *
 * A row may measure against something else than the baseline contender: `baseline: { label,
 * value }` (a fixed number such as a target) or `baseline: { label, contender, key }` (another
 * median). `minRatio` is a floor on value/baseline (throughput), `maxRatio` a ceiling that the
 * ratio must stay under (latency); `target` replaces the target text. Rows without either have
 * no verdict.
 *
 * Against the rival, bigger is better unless the row says `lowerIsBetter: true` (a latency): the
 * ratio shown is still value/rival, and the subject is behind when it is above 1 for such a row,
 * below 1 otherwise.
 */
export function summarize(section, medians) {
  const { baseline, subject, rival } = section;
  return section.rows.map((row) => {
    const value = medians[subject][row.key];
    const base = row.baseline
      ? (row.baseline.value ?? medians[row.baseline.contender ?? subject][row.baseline.key])
      : medians[baseline][row.key];
    const line = { ...row, value, baseline: base, baselineOf: row.baseline?.label ?? baseline, ratio: value / base };
    if (rival) {
      line.rival = medians[rival][row.key];
      line.rivalRatio = value / line.rival;
    }
    const misses = [];
    if (row.minRatio !== undefined && line.ratio < row.minRatio) misses.push(`below ${row.minRatio}× ${line.baselineOf}`);
    if (row.maxRatio !== undefined && line.ratio >= row.maxRatio) misses.push(`not under ${row.maxRatio === 1 ? '' : `${row.maxRatio}× `}${line.baselineOf}`);
    if (rival && (row.lowerIsBetter ? line.rivalRatio > 1 : line.rivalRatio < 1)) misses.push(`behind ${rival}`);
    const judged = row.minRatio !== undefined || row.maxRatio !== undefined || rival;
    line.verdict = !judged ? '—' : misses.length === 0 ? 'met' : `MISSED: ${misses.join(', ')}`;
    return line;
  });
}

/** Sections whose rows measure against different things show the baseline's name per row. */
const namedBaselines = (section) => section.rows.some((row) => row.baseline);

function targetText(section, line) {
  if (line.target !== undefined) return section.rival ? `${line.target}, ${line.lowerIsBetter ? '<' : '>'} ${section.rival}` : line.target;
  if (line.minRatio !== undefined) return `≥ ${line.minRatio}× ${section.baseline}${section.rival ? `, > ${section.rival}` : ''}`;
  if (line.maxRatio !== undefined) return `< ${line.maxRatio}× ${line.baselineOf}`;
  return '—';
}

function cells(section, line) {
  const out = namedBaselines(section)
    ? [line.name, line.unit, line.baselineOf, number(line.baseline), number(line.value), ratio(line.ratio)]
    : [line.name, line.unit, number(line.baseline), number(line.value), ratio(line.ratio)];
  if (section.rival) out.push(number(line.rival), ratio(line.rivalRatio));
  return [...out, targetText(section, line), line.verdict];
}

function headers(section) {
  const { baseline, subject, rival } = section;
  const out = namedBaselines(section)
    ? ['name', 'unit', 'baseline', 'baseline value', subject, `${subject}/baseline`]
    : ['name', 'unit', baseline, subject, `${subject}/${baseline}`];
  if (rival) out.push(rival, `${subject}/${rival}`);
  return [...out, 'target', 'result'];
}

/** Cells that are text, not numbers: left-aligned. */
const textColumn = (section, i, count) => i < (namedBaselines(section) ? 3 : 2) || i >= count - 2;

export function textTable(section, lines) {
  const rows = [headers(section), ...lines.map((line) => cells(section, line))];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  const format = (row) => row.map((cell, i) => (textColumn(section, i, row.length) ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [format(rows[0]), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(format)].join('\n');
}

export function markdownTable(section, lines) {
  const head = headers(section);
  const align = head.map((_, i) => (textColumn(section, i, head.length) ? ':--' : '--:'));
  return [head, align, ...lines.map((line) => cells(section, line))].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

/** Replaces this section's entries in results.json and keeps other sections' entries. */
export async function writeResults(path, section, lines) {
  const previous = existsSync(path) ? JSON.parse(await readFile(path, 'utf8')) : [];
  const entries = lines.map((line) => {
    const entry = { section: section.name, name: line.name, unit: line.unit, value: line.value, baseline: line.baseline, ratio: line.ratio };
    if (line.baselineOf !== section.baseline) entry.baselineOf = line.baselineOf;
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
