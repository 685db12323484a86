import type { Context } from '@opentelemetry/api';
import type { Queryable, QueryResult } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/database-error.js';
import { ValidationError } from '../errors.js';
import type { RecordedEvent } from '../store/event.js';
import { markAppendsNothing } from '../store/sql.js';
import { releaseChannel } from '../store/subscribe.js';
import { runEffectRound, recordEffectOutcomes, settledEffect, type EffectOutcomes, type EffectRequest, type KnownEffects } from './effect-round.js';
import { toGuardValues } from './guards.js';
import type { EffectRule } from './policy.js';
import { effectKey, type EffectOutcome, type HandlerContext, type UpsertGuard } from './processor.js';
import type { BatchOutcome, Pipeline } from './process-events.js';
import { holdParkedStreams, parkedHoldKey } from './parked-streams.js';
import { effectInSpan, handleInSpan } from './processing-spans.js';
import { tracingActive } from '../observability/tracing.js';
import { saveProgress, type Checkpointing } from './progress.js';
import { Counters, type RunContext } from './run-context.js';
import type { PreloadedRow } from './read-batch.js';
import { rowKey, StateBuffer, type ProbeRequest, type StateWrite } from './state-writes.js';

/** What a suspended handler waits on: the scheduler settles it in a round. */
export interface Suspended<T> {
  resolve(value: T): void;
  reject(err: unknown): void;
}

interface Task {
  event: RecordedEvent & { undecodable?: Error };
  index: number;
  state: 'pending' | 'running' | 'done' | 'failed' | 'waiting';
  /** Requests of the handler not settled yet: while there are any, it waits on rastro. */
  requests: number;
  error?: string;
  /** Made at the first write: most handlers write one row, or none. */
  writes: StateWrite[] | undefined;
  /** The next event of the same stream in this batch: it starts when this one is done. */
  next: Task | undefined;
  /** The handler's span context: its effects' spans are children of it. */
  trace?: Context;
}

/**
 * A handler's open request, settled by a round. Settling the last open request of a handler
 * counts it as running again (see {@link Batch.suspend}); a request is settled once.
 */
class Waiter<T> implements Suspended<T> {
  private settled = false;

  constructor(
    private readonly batch: Batch,
    private readonly task: Task,
    private readonly onResolve: (value: T) => void,
    private readonly onReject: (err: unknown) => void,
  ) {}

  resolve(value: T): void {
    if (this.wake()) this.onResolve(value);
  }

  reject(err: unknown): void {
    if (this.wake()) this.onReject(err);
  }

  private wake(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.batch.resumed(this.task);
    return true;
  }
}

class TxStatement extends Waiter<QueryResult<never>> {
  constructor(batch: Batch, task: Task, resolve: (value: QueryResult<never>) => void, reject: (err: unknown) => void, readonly text: string, readonly values?: readonly unknown[]) {
    super(batch, task, resolve, reject);
  }
}

class ProbeWaiter extends Waiter<boolean> implements ProbeRequest {
  constructor(batch: Batch, task: Task, resolve: (value: boolean) => void, reject: (err: unknown) => void, readonly write: StateWrite) {
    super(batch, task, resolve, reject);
  }
}

class EffectWaiter extends Waiter<EffectOutcome> implements EffectRequest {
  private idempotencyKey: string | undefined;

  constructor(
    batch: Batch, task: Task, resolve: (value: EffectOutcome) => void, reject: (err: unknown) => void,
    readonly eventId: string, readonly eventPosition: number, readonly effectType: string, readonly rule: EffectRule,
    readonly call: (key: string) => Promise<unknown>,
  ) {
    super(batch, task, resolve, reject);
  }

  /** Built when a reservation needs it: an effect the ledger already recorded never does. */
  get key(): string {
    return (this.idempotencyKey ??= effectKey(this.eventId, this.effectType));
  }
}

/**
 * What a handler is given: its run, and its requests bound to its event. The methods are bound
 * per handler (a handler may destructure them); `tx`, which few handlers use, is made when asked for.
 */
class TaskContext implements HandlerContext {
  readonly runId: string;
  readonly mode: HandlerContext['mode'];
  readonly simulate: boolean;
  readonly effect: HandlerContext['effect'];
  readonly upsert: HandlerContext['upsert'];
  private statements: Queryable | undefined;

  constructor(
    private readonly batch: Batch,
    private readonly task: Task,
  ) {
    const { runId, mode, simulate } = batch.run;
    this.runId = runId;
    this.mode = mode;
    this.simulate = simulate;
    this.effect = (effectType, call) => batch.effect(task, effectType, call);
    this.upsert = (projection, key, doc, guard) => batch.upsert(task, projection, key, doc, guard);
  }

  get tx(): Queryable {
    return (this.statements ??= { query: (text, values) => this.batch.query(this.task, text, values) });
  }
}

/** A batch must be re-run one event at a time: a handler failed after its SQL ran in the batch's transaction. */
export class BatchNeedsSplitting extends Error {
  constructor(readonly failure: unknown) {
    super('a handler failed inside the batch transaction');
  }
}

interface CommitPlan {
  writeState: ((tx: Queryable) => Promise<void>) | undefined;
  parked: Task[];
  onlyProgress: boolean;
}

const SUPPRESSED: EffectOutcome<never> = Object.freeze({ status: 'suppressed' });

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
  /** Handlers running: neither finished nor waiting on a request of theirs. */
  private active = 0;
  private onQuiet: (() => void) | undefined;
  private transaction: Queryable | undefined;
  private splitReason: unknown;
  /** A handler failed because a database could not be reached: not the event's fault, so the batch fails (and is read again) rather than park it. */
  private outage: unknown;
  private writeOrder = 0;
  /** Streams whose events wait behind events parked before this batch: the commit holds them. */
  private readonly heldStreams: string[] = [];
  /** Whether spans are recorded: with no tracing SDK, handlers and effects run without the span plumbing. */
  private readonly traced = tracingActive();

  constructor(
    readonly run: RunContext,
    events: RecordedEvent[],
    /** The events' effect ledger entries, read with them. */
    private readonly ledger: KnownEffects,
    private readonly blockedStreams: ReadonlySet<string>,
    /** Parked events this batch handles again (a retry): unparked in its commit. */
    private readonly unpark: readonly string[] = [],
    /** Stored rows read with the events, but for the `stale` ones (see {@link StateBuffer.preload}). */
    stored?: { rows: readonly PreloadedRow[]; stale: readonly ReadonlySet<string>[] },
  ) {
    this.tasks = events.map((event, index) => ({ event, index, state: 'pending', requests: 0, writes: undefined, next: undefined }));
    this.state = new StateBuffer(run);
    if (stored) this.state.preload(stored.rows, stored.stale);
  }

  /**
   * Runs the batch to its commit; resolves with the counters it persisted and the streams it
   * parked. With `pipeline`, its commit waits for the previous batch's progress, and a batch that
   * changed nothing but its progress resolves before that is saved, with `saving`.
   */
  async execute(checkpointing: Checkpointing, pipeline?: Pipeline): Promise<BatchOutcome> {
    this.startStreams();
    await this.settle(this.run.db);
    const last = this.tasks[this.tasks.length - 1]!.event;
    let parked: Task[] = [];
    const write = async (tx: Queryable, plan: CommitPlan, holdsReaders: boolean) => {
      parked = plan.parked;
      if (this.unpark.length > 0) await tx.query(this.run.sql.unparkMany, [this.run.runId, this.unpark]);
      await plan.writeState?.(tx);
      await recordEffectOutcomes(this.run, tx, this.outcomes);
      await this.park(tx, plan.parked);
      await saveProgress(this.run, tx, this.counters, checkpointing, last);
      // Delivered as it commits: a live runner waiting on events this transaction held back reads them then.
      if (holdsReaders) await tx.query('select pg_notify($1, $2)', [releaseChannel(this.run.schema), ''], { prepare: true });
    };
    try {
      if (this.statements.length > 0) {
        await pipeline?.previous;
        // Handlers wait on ctx.tx: their statements run in the transaction, then they go on.
        await this.run.db.transaction(async (tx) => {
          await this.holdStreams(tx);
          this.transaction = tx;
          await this.settle(tx);
          await write(tx, this.plan(), true);
        });
      } else {
        const plan = this.plan();
        if (plan.onlyProgress) {
          // Nothing changed but the run's progress: one statement is its own transaction. The
          // next batch needs none of it, so under a pipeline it starts while this is saved.
          const saving = (async () => {
            await pipeline?.previous;
            await saveProgress(this.run, this.run.db, this.counters, checkpointing, last);
          })();
          if (pipeline) return { counters: this.counters, parkedStreams: new Set(), saving, projections: this.state.projections };
          await saving;
        } else {
          await pipeline?.previous;
          await this.run.db.transaction(async (tx) => {
            await this.holdStreams(tx);
            // No handler's statement runs in it, so it appends nothing: readers of the log need
            // not wait for it (a live run beside a replay writing its rows), nor be told it ended.
            await tx.query(markAppendsNothing, undefined, { prepare: true });
            await write(tx, plan, false);
          });
        }
      }
    } catch (err) {
      // The state did not commit, but the calls were made: their outcomes must not be lost.
      await recordEffectOutcomes(this.run, this.run.db, this.outcomes).catch(() => undefined);
      throw err;
    }
    return { counters: this.counters, parkedStreams: new Set(parked.map((task) => task.event.streamId)), rows: this.state.written, projections: this.state.projections };
  }

  /** What the batch's transaction writes, once every handler has finished. Counts as it goes. */
  private plan(): CommitPlan {
    const writes: StateWrite[] = [];
    for (const task of this.tasks) if (task.state === 'done' && task.writes) writes.push(...task.writes);
    const writeState = this.state.prepareCommit(writes, this.counters);
    const parked = this.tasks.filter((task) => task.state === 'failed' || task.state === 'waiting');
    this.counters.add('parked', parked.length);
    this.counters.add('events', this.tasks.length);
    const outcomes = this.outcomes.done.length + this.outcomes.uncertain.length;
    return { writeState, parked, onlyProgress: !writeState && outcomes === 0 && parked.length === 0 && this.unpark.length === 0 };
  }

  /** First in the commit: no retry of a stream this batch parks events behind may be running. */
  private holdStreams(tx: Queryable): Promise<void> {
    return holdParkedStreams(tx, this.run.sql, parkedHoldKey(this.run.schema, this.run.runId), this.run.runId, this.heldStreams);
  }

  private startStreams(): void {
    const lastOfStream = new Map<string, Task>();
    const firsts: Task[] = [];
    for (const task of this.tasks) {
      const previous = lastOfStream.get(task.event.streamId);
      if (previous) previous.next = task;
      else firsts.push(task);
      lastOfStream.set(task.event.streamId, task);
    }
    for (const first of firsts) {
      if (this.blockedStreams.has(first.event.streamId)) {
        this.heldStreams.push(first.event.streamId);
        for (let task: Task | undefined = first; task; task = task.next) task.state = 'waiting';
      } else this.start(first);
    }
  }

  private start(task: Task): void {
    task.state = 'running';
    this.active++;
    this.runTask(task);
  }

  private runTask(task: Task): void {
    const handler = this.run.processor.handlers[task.event.type]!;
    let handled: Promise<void> | void;
    try {
      // An event whose data is not in a shape the handler knows is parked with the reason, never handled.
      if (task.event.undecodable) throw task.event.undecodable;
      handled = this.traced
        ? handleInSpan(this.run, task.event, (ctx) => {
            task.trace = ctx;
            return handler(task.event, this.contextFor(task));
          })
        : handler(task.event, this.contextFor(task));
    } catch (err) {
      handled = Promise.reject(err);
    }
    // Settled a microtask later at the earliest, as an await would: a handler that returns at
    // once does not start the next event of its stream inside this call.
    Promise.resolve(handled).then(() => this.finished(task), (err: unknown) => this.failed(task, err));
  }

  private finished(task: Task): void {
    task.state = 'done';
    if (task.next) this.start(task.next);
    this.release();
  }

  private failed(task: Task, err: unknown): void {
    task.state = 'failed';
    task.error = errorText(err);
    if (isDatabaseUnavailable(err)) this.outage ??= err;
    // Later events of the stream wait behind it.
    for (let later = task.next; later; later = later.next) later.state = 'waiting';
    if (this.transaction) this.splitReason ??= err;
    this.release();
  }

  private release(): void {
    this.active--;
    if (this.active === 0) this.onQuiet?.();
  }

  /**
   * Suspends a handler on `promise`, whose request (a {@link Waiter}) a round settles. A handler
   * may await several requests at once (`Promise.all`): it waits from its first open request and
   * counts as running again when its last one is settled, so rounds go on while any is open.
   */
  private suspend<T>(task: Task, promise: Promise<T>): Promise<T> {
    if (task.requests++ === 0) this.release();
    return promise;
  }

  /** A request of `task` was settled. */
  resumed(task: Task): void {
    if (--task.requests === 0) this.active++;
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

  /**
   * Runs rounds until every handler has finished. Every request of a round is settled in it.
   * Outside the transaction, SQL statements wait for it.
   */
  private async settle(target: Queryable): Promise<void> {
    for (;;) {
      await this.quiet();
      if (this.effects.length > 0) {
        const requests = this.effects.splice(0);
        if (this.transaction) {
          const err = new ValidationError('ctx.effect', 'was called after the handler awaited ctx.tx; ask for effects first');
          for (const request of requests) request.reject(err);
        } else await runEffectRound(this.run, requests, this.counters, this.outcomes);
        continue;
      }
      if (this.probes.length > 0) {
        await this.state.probe(target, this.probes.splice(0));
        continue;
      }
      if (this.transaction && this.statements.length > 0) {
        await this.runStatements(this.transaction, this.statements.splice(0));
        continue;
      }
      if (this.outage !== undefined) throw this.outage;
      if (this.splitReason !== undefined) throw new BatchNeedsSplitting(this.splitReason);
      return;
    }
  }

  private async runStatements(tx: Queryable, statements: TxStatement[]): Promise<void> {
    for (let i = 0; i < statements.length; i++) {
      const statement = statements[i]!;
      try {
        statement.resolve((await tx.query(statement.text, statement.values)) as QueryResult<never>);
      } catch (err) {
        // The transaction is aborted: nothing else can run in it.
        this.splitReason ??= err;
        for (const rest of statements.slice(i)) rest.reject(err);
        return;
      }
    }
  }

  private contextFor(task: Task): HandlerContext {
    return new TaskContext(this, task);
  }

  /** A statement of `task` for the batch's transaction (ctx.tx.query). */
  query<Row>(task: Task, text: string, values?: readonly unknown[]): Promise<QueryResult<Row>> {
    return this.suspend(task, new Promise<QueryResult<Row>>((resolve, reject) => {
      this.statements.push(new TxStatement(this, task, resolve as (value: QueryResult<never>) => void, reject, text, values));
    }));
  }

  effect<Result>(task: Task, effectType: string, call: (key: string) => Promise<Result>): Promise<EffectOutcome<Result>> {
    if (typeof effectType !== 'string' || effectType.length === 0 || typeof call !== 'function') {
      return Promise.reject(new ValidationError('ctx.effect', 'takes an effect type and a function'));
    }
    const declared = this.run.processor.effectTypes;
    if (declared && !declared.includes(effectType)) {
      // Neither performed nor suppressed in silence: the event is parked with the reason.
      return Promise.reject(new ValidationError('ctx.effect', `${JSON.stringify(effectType)} is not an effect type processor ${this.run.processor.name} declares (${declared.join(', ') || 'none'})`));
    }
    const rule = this.run.policy[effectType];
    if (!rule || rule.mode === 'suppress') {
      this.counters.add('suppressed');
      return Promise.resolve(SUPPRESSED);
    }
    const eventId = task.event.id;
    // Settled by the ledger entry read with the event: answered at once, the handler goes on
    // without waiting for a round. After ctx.tx, the round refuses it.
    if (!this.transaction) {
      const settled = settledEffect(this.run, this.ledger, task.event.position, effectType, this.counters);
      if (settled) return Promise.resolve(settled as EffectOutcome<Result>);
    }
    const traced = this.traced ? (key: string) => effectInSpan(task.trace, effectType, key, eventId, () => call(key)) : call;
    return this.suspend(task, new Promise<EffectOutcome<Result>>((resolve, reject) => {
      this.effects.push(new EffectWaiter(this, task, resolve as (value: EffectOutcome) => void, reject, eventId, task.event.position, effectType, rule, traced));
    }));
  }

  upsert(task: Task, projection: string, key: string, doc: Record<string, unknown>, guard: UpsertGuard): Promise<boolean> {
    if (typeof projection !== 'string' || projection.length === 0) return Promise.reject(new ValidationError('projection', 'must be a non-empty string'));
    if (typeof key !== 'string' || key.length === 0) return Promise.reject(new ValidationError('key', 'must be a non-empty string'));
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return Promise.reject(new ValidationError('doc', 'must be an object'));
    let write: StateWrite;
    try {
      write = {
        id: rowKey(projection, key), order: task.index * 1_000_000 + this.writeOrder++, eventId: task.event.id, eventPosition: task.event.position,
        projection, key, doc, guard: toGuardValues(guard),
      };
    } catch (err) {
      return Promise.reject(err);
    }
    if (task.writes) task.writes.push(write);
    else task.writes = [write];
    return this.suspend(task, new Promise<boolean>((resolve, reject) => {
      this.probes.push(new ProbeWaiter(this, task, resolve, reject, write));
    }));
  }

  private async park(tx: Queryable, parked: Task[]): Promise<void> {
    if (parked.length === 0) return;
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
