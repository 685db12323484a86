import type { ProcessingSql } from '../sql.js';
import type { RunnerSession } from '../runner-session.js';

const HEARTBEAT_MS = 2000;

/**
 * Partitions held in this process, per database. Advisory locks are re-entrant within a session:
 * on PGlite every runner shares the one session, and only this tells two of them apart.
 */
const heldInProcess = new WeakMap<object, Set<string>>();

/**
 * The partitions one runner of a group holds, rebalanced so the group's live runners share them
 * evenly. A partition is an advisory lock on the runner's own session: it belongs to one runner
 * at a time, and is freed the moment that runner's connection ends, with no timeout to wait out.
 * Live processors and relays use it alike; `group` names the runners that share (a processor's
 * name, or `relay:<name>`).
 */
export class PartitionLeases {
  readonly owned = new Set<number>();
  private lastBalance = 0;

  constructor(
    private readonly runner: RunnerSession,
    private readonly sql: ProcessingSql,
    private readonly lockName: string,
    private readonly group: string,
    readonly count: number,
  ) {}

  private get held(): Set<string> {
    let held = heldInProcess.get(this.runner.db);
    if (!held) heldInProcess.set(this.runner.db, (held = new Set()));
    return held;
  }

  private heldKey(partition: number): string {
    return `${this.lockName}\u0000${partition}`;
  }

  async rebalance(force = false): Promise<void> {
    if (!force && Date.now() - this.lastBalance < HEARTBEAT_MS) return;
    await this.balanceTo(await this.share());
  }

  /**
   * Registers this runner (its heartbeat), forgets the group's dead ones, and returns the share
   * each live runner holds. A runner holding exactly its share gives up nothing and takes nothing.
   */
  async share(): Promise<number> {
    this.lastBalance = Date.now();
    const { session, token } = this.runner;
    await session.query(this.sql.registerRunner, [this.group, token]);
    await session.query(this.sql.forgetDeadRunners, [this.group]);
    const { rows } = await session.query<{ n: number }>(this.sql.liveRunners, [this.group]);
    return Math.ceil(this.count / Math.max(1, rows[0]?.n ?? 1));
  }

  /** Gives up partitions above `target`, highest first, and takes free ones up to it. */
  async balanceTo(target: number): Promise<void> {
    const { session } = this.runner;
    for (const partition of [...this.owned].sort((a, b) => b - a)) {
      if (this.owned.size <= target) break;
      await session.query(this.sql.unlockPartition, [this.lockName, partition]);
      this.owned.delete(partition);
      this.held.delete(this.heldKey(partition));
    }
    for (let partition = 0; partition < this.count && this.owned.size < target; partition++) {
      if (this.owned.has(partition) || this.held.has(this.heldKey(partition))) continue;
      const { rows: locked } = await session.query<{ locked: boolean }>(this.sql.tryLockPartition, [this.lockName, partition]);
      if (locked[0]?.locked) {
        this.owned.add(partition);
        this.held.add(this.heldKey(partition));
      }
    }
  }

  /** After the runner's session was lost (and its locks with it): holds nothing until the next rebalance. */
  forget(): void {
    for (const partition of this.owned) this.held.delete(this.heldKey(partition));
    this.owned.clear();
  }

  /** Forgets this runner; its partition locks go with its session. */
  async releaseAll(): Promise<void> {
    await this.runner.session.query(this.sql.forgetRunner, [this.group, this.runner.token]).catch(() => undefined);
    for (const partition of this.owned) {
      this.held.delete(this.heldKey(partition));
      // A session that outlives the runner (PGlite's) must not keep its partitions.
      await this.runner.session.query(this.sql.unlockPartition, [this.lockName, partition]).catch(() => undefined);
    }
    this.owned.clear();
  }
}

/** The advisory lock name of a group's partitions, one per schema. */
export function partitionLockName(schema: string, group: string): string {
  return `rastro.partition:${schema}:${group}`;
}
