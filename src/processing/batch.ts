import type { Queryable, QueryResult } from '../db/database.js';
import { ValidationError } from '../errors.js';
import type { RecordedEvent } from '../store/event.js';
import { runEffectRound, recordEffectOutcomes, type EffectOutcomes, type EffectRequest } from './effect-round.js';
import { toGuardValues } from './guards.js';
import { effectKey, type EffectOutcome, type HandlerContext } from './processor.js';
import { Counters, type RunContext } from './run-context.js';
import { StateBuffer, type ProbeRequest, type StateWrite } from './state-writes.js';

interface Task {
  event: RecordedEvent;
  index: number;
  state: 'pending' | 'running' | 'done' | 'failed' | 'waiting';
  error?: string;
  writes: StateWrite[];
}

interface TxStatement {
  text: string;
  values?: readonly unknown[];
  settle: (outcome: { ok: QueryResult<never> } | { error: unknown }) => void;
}

/** A batch must be re-run one event at a time: a handler failed after its SQL ran in the batch's transaction. */
export class BatchNeedsSplitting extends Error {
  constructor(readonly failure: unknown) {
    super('a handler failed inside the batch transaction');
  }
}

/** What the batch commits besides state: where the run resumes, and parked events. */
export interface BatchCommit {
  /** Writes the checkpoint inside the batch's transaction. */
  saveCheckpoint(tx: Queryable, last: RecordedEvent): Promise<void>;
}

const errorText = (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(0, 2000);

/**
 * Runs a processor's handlers over a batch of events as one unit of work.
 *
 * Handlers run concurrently, each stream's events in order. Their effects and state writes are
 * collected in rounds: when every handler is waiting on rastro, the round's effects are
 * reserved in one committed statement and then called, and its writes are checked against the
 * stored rows in one query. Last, one transaction writes the state (or the diffs), the effects'
 * outcomes, parked events, counters and the checkpoint.
 */
export class Batch {
  private readonly tasks: Task[];
  private readonly counters = new Counters();
  private readonly state: StateBuffer;
  private readonly outcomes: EffectOutcomes = { done: [], uncertain: [] };
  private effects: EffectRequest[] = [];
  private probes: ProbeRequest[] = [];
  private statements: TxStatement[] = [];
  private active = 0;
  private onQuiet: (() => void) | undefined;
  private transaction: Queryable | undefined;
  private writeOrder = 0;
  private ledger: Promise<Map<string, string>> | undefined;

  constructor(
    private readonly run: RunContext,
    events: RecordedEvent[],
    private readonly blockedStreams: ReadonlySet<string>,
  ) {
    this.tasks = events.map((event, index) => ({ event, index, state: 'pending', writes: [] }));
    this.state = new StateBuffer(run);
  }

  /** Runs the batch to its commit; resolves with the counters it persisted. */
  async execute(commit: BatchCommit): Promise<Counters> {
    // The ledger entries this batch can meet (its events × the effect types the policy applies),
    // read on another connection while the handlers run their first round.
    const types = Object.entries(this.run.policy).filter(([, rule]) => rule.mode === 'apply').map(([type]) => type);
    const keys = this.tasks.flatMap((task) => types.map((type) => effectKey(task.event.id, type)));
    this.ledger = this.run.db
      .query<{ key: string; state: string }>(this.run.sql.effectStates, [keys])
      .then(({ rows }) => new Map(rows.map((row) => [row.key, row.state])));
    this.ledger.catch(() => undefined);
    this.startStreams();
    await this.settle(this.run.db);
    try {
      await this.run.db.transaction(async (tx) => {
        this.transaction = tx;
        await this.settle(tx);
        await this.state.commit(tx, this.tasks.filter((task) => task.state === 'done').flatMap((task) => task.writes), this.counters);
        await recordEffectOutcomes(this.run, tx, this.outcomes);
        await this.park(tx);
        this.counters.add('events', this.tasks.length);
        const entries = this.counters.entries();
        await tx.query(this.run.sql.addCounters, [this.run.runId, entries.map(([name]) => name), entries.map(([, value]) => value)]);
        await commit.saveCheckpoint(tx, this.tasks[this.tasks.length - 1]!.event);
      });
    } catch (err) {
      // The state did not commit, but the calls were made: their outcomes must not be lost.
      await recordEffectOutcomes(this.run, this.run.db, this.outcomes).catch(() => undefined);
      throw err;
    }
    return this.counters;
  }

  private startStreams(): void {
    const byStream = new Map<string, Task[]>();
    for (const task of this.tasks) {
      const list = byStream.get(task.event.streamId) ?? [];
      list.push(task);
      byStream.set(task.event.streamId, list);
    }
    for (const [streamId, list] of byStream) {
      if (this.blockedStreams.has(streamId)) list.forEach((task) => (task.state = 'waiting'));
      else this.startChain(list, 0);
    }
  }

  private startChain(chain: Task[], at: number): void {
    const task = chain[at];
    if (!task) return;
    task.state = 'running';
    this.active++;
    void this.runTask(chain, at, task);
  }

  private async runTask(chain: Task[], at: number, task: Task): Promise<void> {
    try {
      await this.run.processor.handlers[task.event.type]!(task.event, this.contextFor(task));
      task.state = 'done';
    } catch (err) {
      task.state = 'failed';
      task.error = errorText(err);
      // Later events of the stream wait behind it.
      for (const later of chain.slice(at + 1)) later.state = 'waiting';
      if (this.transaction) this.splitReason ??= err;
    }
    if (task.state === 'done') this.startChain(chain, at + 1);
    this.release();
  }

  private splitReason: unknown;

  private release(): void {
    this.active--;
    if (this.active === 0) this.onQuiet?.();
  }

  /** Parks the handler until the scheduler settles the request; `settle` re-activates it first. */
  private wait<T>(enqueue: (settle: (outcome: { ok: T } | { error: unknown }) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      enqueue((outcome) => {
        this.active++;
        if ('ok' in outcome) resolve(outcome.ok);
        else reject(outcome.error);
      });
      this.release();
    });
  }

  private quiet(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.onQuiet = () => {
        this.onQuiet = undefined;
        resolve();
      };
    });
  }

  /** Runs rounds until every handler has finished. Outside the transaction, SQL statements wait for it. */
  private async settle(target: Queryable): Promise<void> {
    for (;;) {
      await this.quiet();
      if (this.effects.length > 0) {
        const requests = this.effects.splice(0);
        if (this.transaction) {
          const err = new ValidationError('ctx.effect', 'was called after the handler awaited ctx.tx; ask for effects first');
          requests.forEach((request) => request.settle({ error: err }));
        } else await runEffectRound(this.run, requests, this.counters, this.outcomes, this.ledger!);
        continue;
      }
      if (this.probes.length > 0) {
        await this.state.probe(target, this.probes.splice(0));
        continue;
      }
      if (this.transaction && this.statements.length > 0) {
        await this.runStatements(this.transaction);
        continue;
      }
      if (this.splitReason !== undefined) throw new BatchNeedsSplitting(this.splitReason);
      return;
    }
  }

  private async runStatements(tx: Queryable): Promise<void> {
    for (const statement of this.statements.splice(0)) {
      try {
        statement.settle({ ok: (await tx.query(statement.text, statement.values)) as QueryResult<never> });
      } catch (err) {
        statement.settle({ error: err });
        // The transaction is aborted: nothing else can run in it.
        this.splitReason ??= err;
        for (const rest of this.statements.splice(0)) rest.settle({ error: err });
      }
    }
  }

  private contextFor(task: Task): HandlerContext {
    const run = this.run;
    return {
      runId: run.runId,
      mode: run.mode,
      simulate: run.simulate,
      effect: <Result>(effectType: string, call: (key: string) => Promise<Result>) => {
        if (typeof effectType !== 'string' || effectType.length === 0 || typeof call !== 'function') {
          return Promise.reject(new ValidationError('ctx.effect', 'takes an effect type and a function'));
        }
        const rule = run.policy[effectType];
        if (!rule || rule.mode === 'suppress') {
          this.counters.add('suppressed');
          return Promise.resolve<EffectOutcome<Result>>({ status: 'suppressed' });
        }
        return this.wait<EffectOutcome<Result>>((settle) =>
          this.effects.push({ key: effectKey(task.event.id, effectType), eventId: task.event.id, effectType, rule, call, settle: settle as EffectRequest['settle'] }),
        );
      },
      upsert: (projection, key, doc, guard) => {
        if (typeof projection !== 'string' || projection.length === 0) return Promise.reject(new ValidationError('projection', 'must be a non-empty string'));
        if (typeof key !== 'string' || key.length === 0) return Promise.reject(new ValidationError('key', 'must be a non-empty string'));
        if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return Promise.reject(new ValidationError('doc', 'must be an object'));
        let write: StateWrite;
        try {
          write = { order: task.index * 1_000_000 + this.writeOrder++, eventId: task.event.id, projection, key, doc, guard: toGuardValues(guard) };
        } catch (err) {
          return Promise.reject(err);
        }
        task.writes.push(write);
        return this.wait<boolean>((settle) => this.probes.push({ write, settle: (applied) => settle({ ok: applied }) }));
      },
      tx: {
        query: <Row>(text: string, values?: readonly unknown[]) =>
          this.wait<QueryResult<Row>>((settle) => this.statements.push({ text, values, settle: settle as TxStatement['settle'] })),
      },
    };
  }

  private async park(tx: Queryable): Promise<void> {
    const parked = this.tasks.filter((task) => task.state === 'failed' || task.state === 'waiting');
    if (parked.length === 0) return;
    this.counters.add('parked', parked.length);
    await tx.query(this.run.sql.parkMany, [
      this.run.processor.name,
      this.run.runId,
      parked.map((task) => task.event.id),
      parked.map((task) => task.event.streamId),
      parked.map((task) => task.event.position),
      parked.map((task) => (task.state === 'failed' ? 'failed' : 'waiting')),
      parked.map((task) => task.error ?? null),
    ]);
  }
}
