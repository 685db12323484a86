// Runs the benchmark sections: `node bench/run.js [section]`. Each contender of a section runs in
// its own child process; runs are interleaved and the median of each row is reported.
import { fork } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { assertReachable, describeUrl } from './shared/database.js';
import { median } from './shared/measure.js';
import { markdownTable, summarize, textTable, writeDocSection, writeResults } from './shared/report.js';
import { eventStoreSection } from './event-store/section.js';
import { httpApiSection } from './http-api/section.js';
import { processingSection } from './processing/section.js';
import { replayScaleSection } from './processing/scale-section.js';
import { outboxSection } from './outbox/section.js';
import { intakeSection } from './intake/section.js';
import { chargesSection } from './charges/section.js';
import { auditSection } from './audit/section.js';
import { installSection } from './install/section.js';
import { trailSection } from './trail/section.js';
import { growthSection } from './growth/section.js';
import { clusterSection } from './cluster/section.js';

const SECTIONS = [installSection, eventStoreSection, httpApiSection, processingSection, replayScaleSection, outboxSection, clusterSection, intakeSection, chargesSection, auditSection, growthSection, trailSection];
const RUNS = process.env.BENCH_RUNS ? Math.max(1, Number(process.env.BENCH_RUNS)) : undefined;
/** Runs per contender: BENCH_RUNS, else the section's own count (noisier sections take more), else 3. */
const runsOf = (section) => RUNS ?? section.runs ?? 3;
const RESULTS_PATH = fileURLToPath(new URL('./results.json', import.meta.url));
const DOC_PATH = fileURLToPath(new URL('../docs/BENCHMARKS.md', import.meta.url));
/** The command as run, against the server it measured (a password is hidden). */
const command = (section) => `DATABASE_URL=${describeUrl()} npm run build && node bench/run.js ${section.name}`;

function runChild(contender, run) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(contender.script), [String(run)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let results;
    let reason;
    child.on('message', (message) => {
      if (message?.results) results = message.results;
      if (message?.error) reason = message.error;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0 && results) return resolve(results);
      const how = signal ? `signal ${signal}` : code === 0 ? 'exit code 0 without results' : `exit code ${code}`;
      reject(new Error(`contender ${contender.name} failed in run ${run} (${how}): ${reason ?? 'see its error printed above'}`));
    });
  });
}

async function runSection(section) {
  const samples = Object.fromEntries(section.contenders.map((contender) => [contender.name, []]));
  const runs = runsOf(section);
  for (let run = 1; run <= runs; run += 1) {
    for (const contender of section.contenders) {
      const started = Date.now();
      const results = await runChild(contender, run);
      samples[contender.name].push(results);
      const values = Object.entries(results)
        .map(([key, value]) => `${key} ${value >= 100 ? Math.round(value) : value.toFixed(1)}`)
        .join(', ');
      console.error(`${section.name}: run ${run}/${runs} ${contender.name} in ${((Date.now() - started) / 1000).toFixed(1)} s: ${values}`);
    }
  }
  const medians = {};
  for (const [name, runs] of Object.entries(samples)) {
    const keys = Object.keys(runs[0]);
    medians[name] = Object.fromEntries(keys.map((key) => [key, median(runs.map((results) => results[key]))]));
  }
  return { lines: summarize(section, medians), medians };
}

function docBody(section, { lines, medians }, serverVersion) {
  return `
Command:

\`\`\`sh
${command(section)}
\`\`\`

Machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), PostgreSQL ${serverVersion} with default
settings on the same machine, Node ${process.version}. Median of ${runsOf(section)} runs, measured ${new Date().toISOString().slice(0, 10)}.

${markdownTable(section, lines)}

${section.targets.trim()}

${(typeof section.notes === 'function' ? section.notes(medians) : section.notes).trim()}
`;
}

async function main() {
  const filter = process.argv[2];
  const sections = SECTIONS.filter((section) => !filter || section.name === filter);
  if (sections.length === 0) throw new Error(`no bench section named ${filter}; sections: ${SECTIONS.map((s) => s.name).join(', ')}`);
  const serverVersion = await assertReachable();
  console.error(`PostgreSQL ${serverVersion} at ${describeUrl()}, ${RUNS ?? 'by section:'} runs per contender${RUNS ? '' : ` ${sections.map((s) => `${s.name} ${runsOf(s)}`).join(', ')}`}`);
  for (const section of sections) {
    const missing = await section.available?.();
    if (missing) {
      console.error(`${section.name}: skipped: ${missing}`);
      continue;
    }
    const started = Date.now();
    const summary = await runSection(section);
    console.log(`\n${section.title}\n\n${textTable(section, summary.lines)}\n`);
    console.error(`${section.name}: ${((Date.now() - started) / 1000).toFixed(0)} s`);
    await writeResults(RESULTS_PATH, section, summary.lines);
    await writeDocSection(DOC_PATH, section.title, docBody(section, summary, serverVersion));
  }
}

main().catch((err) => {
  console.error(`bench failed: ${err.message}`);
  process.exitCode = 1;
});
