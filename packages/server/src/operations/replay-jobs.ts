import { quoteSchema } from 'rastro/internal/db/schema-name.js';
import { RastroError, ValidationError } from 'rastro/internal/errors.js';
import { validatePolicy } from 'rastro/internal/processing/policy.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import { runReplay, type ReplayOptions } from 'rastro/internal/processing/replay-runner.js';
import { processingSql } from 'rastro/internal/processing/sql.js';
import { newRunId } from 'rastro/internal/processing/run-id.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { OperationConflictError } from './errors.js';

/** What the operations API asks for when it starts a replay. */
export interface ReplayRequest {
  processor: string;
  runId?: string;
  from?: Date;
  to?: Date;
  fromPosition?: number;
  toPosition?: number;
  /** At most this many events per second. */
  maxRate?: number;
  /** Read no batch ahead while live runners or relays run. @defaultValue true */
  yieldToLive?: boolean;
  simulate: boolean;
  policy?: unknown;
}

/** A replay this process started: running, completed, or failed with the reason. */
export interface ReplayJob {
  runId: string;
  state: 'running' | 'completed' | 'failed';
  error: string | null;
}

/**
 * Replays started from the operations API, run in this process in the background. The run's
 * progress is in the database like any replay's; this keeps only whether it is still going and
 * why it failed.
 *
 * @example
 * ```ts
 * const replays = replayJobs(store, processors, { onError: (err) => log.warn(err) })
 * const { runId } = await replays.start({ processor: 'commissions', simulate: true, from, to })
 * ```
 */
export function replayJobs(store: EventStore, processors: ReadonlyMap<string, Processor> | undefined, options: { onError?: (err: unknown, runId: string) => void } = {}) {
  const sql = processingSql(quoteSchema(store.schema));
  const jobs = new Map<string, ReplayJob & { done: Promise<void> }>();
  const runExists = async (runId: string) => (await store.db.query<{ status: string }>(sql.getRun, [runId])).rows[0];

  return {
    async start(request: ReplayRequest): Promise<ReplayJob> {
      if (!processors) throw new OperationConflictError('this server was started without processors: start it with --processors <module> or a rastro.config.js to run replays');
      const processor = processors.get(request.processor);
      if (!processor) throw new ValidationError('processor', `unknown processor ${JSON.stringify(request.processor)}; known: ${[...processors.keys()].join(', ')}`);
      const policy = validatePolicy(request.policy ?? {});
      if (request.from && request.to && request.from >= request.to) throw new ValidationError('to', 'must be after from');
      const runId = request.runId ?? newRunId(request.simulate ? 'simulate' : 'replay');
      if (jobs.get(runId)?.state === 'running') throw new OperationConflictError(`run ${runId} is running`);
      // Taken before the first await, so two requests for one run id cannot both start it.
      const job: ReplayJob & { done: Promise<void> } = { runId, state: 'running', error: null, done: Promise.resolve() };
      const previous = jobs.get(runId);
      const release = () => (previous ? jobs.set(runId, previous) : jobs.delete(runId));
      jobs.set(runId, job);
      let exists: unknown;
      try {
        exists = await runExists(runId);
      } catch (err) {
        release();
        throw err;
      }
      if (exists) {
        release();
        throw new OperationConflictError(`run ${runId} exists; choose another run id`);
      }
      const replay: ReplayOptions = {
        store, runId, policy, simulate: request.simulate,
        from: request.from, to: request.to, fromPosition: request.fromPosition, toPosition: request.toPosition, maxRate: request.maxRate,
        yieldToLive: request.yieldToLive,
      };
      let failed: unknown;
      job.done = runReplay(processor, replay).then(
        () => void (job.state = 'completed'),
        (err: unknown) => {
          failed = err;
          job.state = 'failed';
          // Only rastro's own messages are shown; anything else may carry internals.
          job.error = err instanceof RastroError ? err.message : 'the replay failed; the server log has the reason';
          options.onError?.(err, runId);
        },
      );
      // Answer once the run is registered, so reading it right after finds it.
      while (job.state === 'running' && !(await runExists(runId))) await new Promise((resolve) => setTimeout(resolve, 10));
      if (job.state === 'failed' && failed instanceof ValidationError) {
        jobs.delete(runId);
        throw failed;
      }
      return { runId, state: job.state, error: job.error };
    },
    /** The job of a run this process started, if any. */
    get(runId: string): ReplayJob | undefined {
      const job = jobs.get(runId);
      return job && { runId: job.runId, state: job.state, error: job.error };
    },
    /** Waits for the replays still running (a server closing). */
    async settled(): Promise<void> {
      await Promise.all([...jobs.values()].map((job) => job.done));
    },
  };
}

export type ReplayJobs = ReturnType<typeof replayJobs>;
