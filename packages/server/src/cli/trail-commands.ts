import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { NotSealedError, ProofInvalidError, TrailFindingsError } from 'rastro/internal/errors.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { parseDigest, type Digest } from 'rastro/internal/trail/digest.js';
import { proveEvent, verifyProof, type TrailProof } from 'rastro/internal/trail/proof.js';
import { startSealer } from 'rastro/internal/trail/sealer.js';
import { takeDigest } from 'rastro/internal/trail/take-digest.js';
import { trailSql } from 'rastro/internal/trail/sql.js';
import { quoteSchema } from 'rastro/internal/db/schema-name.js';
import { trailVerifications } from 'rastro/internal/trail/verifications.js';
import { verifyTrail } from 'rastro/internal/trail/verify.js';
import type { RastroConfig } from '../config.js';
import { digestKeys } from '../operations/trail-loops.js';
import { checkedArgument, jsonOption, wholeNumber } from './options.js';
import { printJson, table } from './output.js';
import { showWhileRunning, startProgress } from './progress.js';
import { withRoleStore, withStore } from './services.js';
import { stopSignal } from './stop-signal.js';
import { UsageError } from './usage-error.js';

/** A JSON file named on the command line: a file that cannot be read or parsed is misuse. */
function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new UsageError(`${what} ${file} cannot be read`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} ${file} is not JSON`);
  }
}

function readDigest(file: string): Digest {
  try {
    return parseDigest(readJson(file, 'digest'), file);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`digest ${(err as Error).message}`);
  }
}

/** `rastro seal`: the sealer as a role of its own, until stopped; `--once` seals what there is and exits. */
async function seal(options: { once?: boolean; interval: number; maxEvents: number }): Promise<void> {
  await withRoleStore('seal', async (store) => {
    const progress = startProgress({ pipedEveryMs: 10_000 });
    const sealer = await startSealer({
      store, intervalMs: options.interval, maxEvents: options.maxEvents,
      onError: (err) => progress.note(`rastro seal: ${(err as Error).message} (backing off, will retry)`),
    });
    if (!options.once) {
      console.log(`sealing the trail of schema ${store.schema} (one sealer at a time; the others stand by)`);
      const stopShowing = showWhileRunning(progress, () => `sealed ${sealer.sealed.blocks} blocks, ${sealer.sealed.events} events`);
      await stopSignal();
      stopShowing();
    } else {
      // Until every event committed when it started is sealed (by this sealer, or one that held the lease).
      const sql = trailSql(quoteSchema(store.schema));
      const { rows: [end] } = await store.db.query<{ position: unknown }>(sql.maxPosition);
      const waiting = async () => (await store.db.query<{ waiting: boolean }>(sql.unsealedUpTo, [end!.position])).rows[0]!.waiting;
      while (await waiting()) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await sealer.stop();
    progress.end();
    console.log(`sealed ${sealer.sealed.blocks} blocks, ${sealer.sealed.events} events`);
  });
}

async function digest(store: EventStore, config: RastroConfig): Promise<void> {
  const taken = await takeDigest(store, { key: digestKeys(config).signing });
  if (!taken) throw new NotSealedError('the trail');
  printJson(taken);
}

async function verify(store: EventStore, config: RastroConfig, options: { digest?: string[]; full?: boolean; json?: boolean }): Promise<void> {
  const digests = (options.digest ?? []).map((file) => ({ digest: readDigest(file), source: file }));
  const { trusted } = digestKeys(config);
  const record = trailVerifications(store.db, store.schema);
  const since = options.full ? undefined : (await record.latest())?.checkpoint;
  const progress = startProgress();
  const started = new Date();
  const verification = await verifyTrail(store, { full: options.full, since, digests, publicKey: trusted, onProgress: (n) => progress.show(`${n} examined`) });
  progress.end();
  await record.record(started, verification);
  if (options.json) printJson(verification);
  else {
    const how = verification.full ? 'everything' : 'since the last verification';
    console.log(`examined ${verification.examined} (${how}), through block ${verification.checkpoint.block}; ${digests.length} digest${digests.length === 1 ? '' : 's'} checked`);
    if (verification.findings.length === 0) console.log('\nclean: the trail holds, and every digest given is part of it');
    else console.log(`\n${table(['finding', 'row', 'what is wrong', 'what to do'], verification.findings.map((f) => [f.kind, `${f.subject.type} ${f.subject.id}`, f.detail, f.action]))}`);
  }
  if (verification.findings.length > 0) throw new TrailFindingsError(verification.findings.length);
}

async function prove(store: EventStore, eventId: string, options: { digest?: string }): Promise<void> {
  printJson(await proveEvent(store, eventId, { digest: options.digest ? readDigest(options.digest) : undefined }));
}

function checkProof(proofFile: string, digestFile: string, options: { publicKey?: string }): void {
  const proof = readJson(proofFile, 'proof') as TrailProof;
  const digestValue = readDigest(digestFile);
  const publicKey = options.publicKey === undefined ? undefined : (() => {
    try {
      return readFileSync(options.publicKey, 'utf8');
    } catch {
      throw new UsageError(`public key ${options.publicKey} cannot be read`);
    }
  })();
  const problems = verifyProof(proof, digestValue, { publicKey });
  if (problems.length > 0) throw new ProofInvalidError(problems);
  console.log(`the proof holds: event ${proof.event.id} (${proof.event.type}, version ${proof.event.streamVersion} of ${proof.event.streamId}) is in block ${proof.blocks[0]!.block} of the trail digest ${digestFile} names${publicKey ? ', signed by the trusted key' : ''}`);
}

async function forget(store: EventStore, subject: string): Promise<void> {
  const { hadKey, eventId } = await store.forget(subject);
  console.log(hadKey
    ? `forgot ${subject}: its key is deleted, its personal fields read as null from now on; event ${eventId} records the erasure`
    : `${subject} had no key (no personal data stored, or forgotten before); it stays forgotten, event ${eventId} records it`);
}

const uuid = (value: string) => {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) throw new Error(`${JSON.stringify(value)} is not an event id (a UUID)`);
};

/** `rastro seal`, `digest`, `verify`, `prove`, `verify-proof`: the trail (docs/trail.md). */
export function registerTrailCommands(program: Command): void {
  program.command('seal')
    .summary('seal the log into blocks of the trail, as a role of its own')
    .description('Seals the log, in global commit order, into blocks whose Merkle roots and chained hashes the trail verifies: one sealer at a time (the others stand by). serve seals by default (RASTRO_SEALER=off where this runs).')
    .option('--once', 'seal what is committed now, then exit')
    .addOption(new Option('--interval <ms>', 'how often it seals what committed since').argParser(wholeNumber('--interval', { min: 10, max: 3_600_000 })).default(1000))
    .addOption(new Option('--max-events <n>', 'most events in one block').argParser(wholeNumber('--max-events', { min: 1, max: 100_000 })).default(10_000))
    .action((options: { once?: boolean; interval: number; maxEvents: number }) => seal(options));
  program.command('digest')
    .summary('print a digest of the trail\'s head block, as JSON')
    .description('Prints the head block of the trail as JSON (block, hash, last position, time), signed with Ed25519 when RASTRO_DIGEST_KEY_FILE names a key. Keep it where a database administrator cannot reach it: rastro verify --digest proves later that nothing up to it changed.')
    .action(() => withStore((store, config) => digest(store, config)));
  program.command('verify')
    .summary('verify the trail: every event, block and digest given')
    .description('Recomputes each event\'s hash from its content and its predecessor\'s, each stream\'s head, each block\'s Merkle root and chained hash, and checks every digest given is still part of the chain. Incremental by default (what was written since the last verification); --full checks everything. Exit 0 when clean, 1 on findings, 2 on misuse.')
    .option('--digest <files...>', 'digests kept outside the database (rastro digest), each to check against the chain')
    .option('--full', 'check everything, not only what was written since the last verification')
    .addOption(jsonOption())
    .action((options: { digest?: string[]; full?: boolean; json?: boolean }) => withStore((store, config) => verify(store, config, options)));
  program.command('prove')
    .summary('print the proof that an event is in the trail, as JSON')
    .description('Prints a proof (rastro-proof/1) that the event is in the trail: the event as its hash covers it, its Merkle path in its block, and the block headers up to the digest (or the head). rastro verify-proof, or verifyProof in the library, checks it with no database.')
    .addArgument(checkedArgument('<event-id>', 'the event\'s id', uuid))
    .addOption(new Option('--digest <file>', 'prove against this digest (default: the head block)'))
    .action((eventId: string, options: { digest?: string }) => withStore((store) => prove(store, eventId, options)));
  program.command('forget')
    .summary("erase a data subject's personal fields, keeping every event and proof")
    .description("Deletes the data subject's key (RASTRO_MASTER_KEY_FILE wraps the keys), so its personal fields read as null on every read path from now on, refuses its new personal data, and appends rastro.subject.forgotten to stream forgotten:<subject>. No event is updated: the trail, its blocks and its proofs still verify.")
    .addArgument(checkedArgument('<subject>', "the data subject's id (a customer id)", (value) => {
      if (value.length === 0 || value.length > 200) throw new Error('a subject id is 1 to 200 characters');
    }))
    .action((subject: string) => withStore((store) => forget(store, subject)));
  program.command('verify-proof')
    .summary('check a proof against a digest, with no database')
    .description('Checks a proof (rastro prove) against a digest (rastro digest): the event hashes to its link, the link leads to its block\'s Merkle root, and the blocks chain to the digest. Exit 0 when it holds, 1 when not, 2 on misuse.')
    .argument('<proof>', 'the proof, a JSON file')
    .argument('<digest>', 'the digest, a JSON file')
    .option('--public-key <file>', 'also require the digest to be signed by this Ed25519 public key (PEM)')
    .action((proofFile: string, digestFile: string, options: { publicKey?: string }) => checkProof(proofFile, digestFile, options));
}
