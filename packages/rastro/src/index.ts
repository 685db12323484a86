export {
  RastroError,
  ValidationError,
  ConfigError,
  ConcurrencyError,
  EventIdConflictError,
  MigrationError,
  TransactionIdsRewoundError,
  DatabaseError,
  DatabaseUnavailableError,
  SchemaNotMigratedError,
  ClosedError,
  RunInProgressError,
  AmbiguousParkedEventError,
  type ExpectedVersion,
} from './errors.js';
export type { Database, Queryable, QueryResult, Transaction } from './db/database.js';
export type { Executor, PgClient } from './db/executor.js';
export type { PgPool } from './db/postgres.js';
export { fromKysely, fromDrizzle, fromKnex, type KyselyTransaction, type DrizzleTransaction, type KnexTransaction } from './db/adapters.js';
export { openDatabase, type OpenDatabaseOptions } from './db/open-database.js';
export { migrate, type MigrateOptions } from './db/migrate.js';
export { migrationStatus, type MigrationStatus } from './db/migration-status.js';
export { isDatabaseUnavailable } from './db/database-error.js';
export {
  createEventStore,
  type EventStore,
  type EventStoreOptions,
  type AppendOptions,
  type AppendResult,
  type ReadStreamOptions,
  type ReadAllOptions,
  type ReaderDelay,
} from './store/event-store.js';
export type { AlsoStatement, AppendNewResult, ExpectedStream } from './store/append-new.js';
export type { Snapshot, StreamTail } from './store/snapshots.js';
export { LOG_START, type NewEvent, type NewEventFields, type RecordedEvent, type RecordedEventFields, type EventMetadata, type LogCheckpoint } from './store/event.js';
export {
  defineEvents,
  EventTypes,
  EventVersionError,
  UpcastError,
  type EventMap,
  type AnyEvents,
  type EventDefinition,
  type InferEvents,
  type Upcaster,
  type UpcastContext,
} from './store/event-types.js';
export type { Subscription, SubscribeOptions } from './store/subscribe.js';
export { untilDatabaseReachable, type StartAttempt, type UntilReachableOptions } from './db/until-reachable.js';
export {
  defineProcessor,
  effectKey,
  EffectNotAttemptedError,
  type Processor,
  type EventHandler,
  type EventHandlers,
  type ProcessorDefinition,
  type EffectDeclarations,
  type HandlerContext,
  type EffectOutcome,
  type UpsertGuard,
} from './processing/processor.js';
export { validatePolicy, policyFor, type EffectPolicy, type EffectRule } from './processing/policy.js';
export { runLive, type LiveOptions, type LiveRunner } from './processing/live-runner.js';
export { runReplay, type ReplayOptions, type RunSummary } from './processing/replay-runner.js';
export { effectLedger, EffectStateError, EFFECT_STATES, type EffectRecord, type EffectState } from './processing/effect-admin.js';
export {
  EffectDeclinedError,
  type EffectType,
  type EffectTypes,
  type ReconcileAnswer,
  type SettledEffect,
  type UnsettledEffect,
} from './processing/ledger/effect-type.js';
export { Reconciler, reconcileEffects, startReconcileLoop, type ReconcileLoop, type ReconcileReport, type ReconcilerOptions } from './processing/ledger/reconciler.js';
export { createCharges, validateChargeRequest, CHARGE_STATUSES, type Charge, type Charges, type ChargeOptions, type ChargeRequest, type ChargeStatus } from './charges/charges.js';
export { acquirerClient, CaptureDeclinedError, type Acquirer, type Capture, type CaptureLookup, type CaptureRequest, type ListedCapture } from './charges/acquirer.js';
export { startAcquirerFake, type AcquirerFake, type AcquirerFakeOptions, type CaptureFault } from './charges/acquirer-fake.js';
export { ChargeNotFoundError, IdempotencyKeyRequiredError, AuditFindingsError } from './errors.js';
export { parkedEvents, type ParkedEvent, type ParkedRetryResult } from './processing/parking.js';
export type { ParkedEventEffect, AlreadyDoneEffect } from './processing/parked-effects.js';
export { runDiff, type DiffRow } from './processing/run-diff.js';
export { createOutbox, outboxChannel, type Outbox, type OutboxMessage } from './outbox/outbox.js';
export { runRelay, type Relay, type RelayOptions } from './outbox/relay.js';
export type { EventLogSelection, RelayMessage } from './outbox/relay-source.js';
export type { RelayCounter } from './outbox/publish-batch.js';
export { relayAdmin, type RelayAdmin, type RelayStatus, type ParkedMessage } from './outbox/relay-admin.js';
export { outboxRetention, type RetentionOptions } from './outbox/retention.js';
export { PublishRejectedError, type Publisher, type PublishAck, type BrokerMessage } from './brokers/message.js';
export type { BrokerConsumer, Delivery } from './brokers/consumer.js';
export { createMemoryPublisher, type MemoryPublisher } from './brokers/memory.js';
export { consumeIntoStore, eventIdOf, type Inbox, type InboxOptions, type InboxCounts } from './inbox/consume-into-store.js';
export { projections, type ProjectionRow, type Projections } from './processing/projections.js';
export { runLiveRound, type LiveRoundOptions } from './processing/live-round.js';
export { replayStream, type StreamReplayOptions } from './processing/stream-replay.js';
export { OrderNotFoundError, ProviderError } from './errors.js';
export {
  ORDER_STATUSES,
  parseLastUpdate,
  parseOrderSnapshot,
  snapshotEventId,
  orderStreamId,
  orderKey,
  type OrderSnapshot,
  type OrderStatus,
  type SnapshotChannel,
} from './intake/order-snapshot.js';
export { ORDER_SNAPSHOT, ORDER_IMPORT, type NormalizedOrder, type ImportOutcome, type ImportLifecycle } from './intake/order-state.js';
export { snapshotIntake, type SnapshotIntake, type RecordedSnapshot } from './intake/snapshot-intake.js';
export {
  orderNormalizer,
  ORDER_NORMALIZER,
  ORDER_NORMALIZER_POLICY,
  ORDER_PROJECTION,
  CANCELLED_AFTER_IMPORT,
  type OrderNormalizerOptions,
  type CancelledAfterImportAlert,
} from './intake/order-normalizer.js';
export { createOrders, type Orders, type OrderView, type OrderHistoryEntry } from './intake/orders.js';
export { orderAlertClient, type OrderAlertSender } from './intake/order-alerts.js';
export { pollProvider, type PollOptions, type PollProgress } from './intake/provider-poller.js';
export { startProviderFake, restTime, webhookTime, type ProviderFake, type ProviderOrder, type WebhookTarget } from './intake/provider-fake.js';
export { tracer, TRACER_NAME, withSpan, withAcquirerSpan, annotateActiveSpan, type WithSpanOptions } from './observability/tracing.js';
export { extractTraceContext, injectTraceContext, activeTraceparent, parseTraceparent, formatTraceparent, type TraceHeaders } from './observability/trace-context.js';
export { runStatus, type RunStatus } from './processing/run-status.js';
export { runDiffPage, type DiffPage } from './processing/run-diff.js';
export { runAudit, AUDIT_CHECKS, validateCheckNames, type AuditOptions, type AuditReport, type AuditCheckName } from './audit/run-audit.js';
export { auditLog, type AuditLog, type AuditRecord, type CheckSummary } from './audit/audit-log.js';
export type { Finding, SubjectType } from './audit/finding.js';
export type { BrokerRecord } from './audit/checks/broker-check.js';
export type { FigureSample } from './observability/figure-sample.js';
export { startSealer, type Sealer, type SealerOptions, type StoredBlock } from './trail/sealer.js';
export { takeDigest } from './trail/take-digest.js';
export { digestKey, signDigest, digestSignedBy, parseDigest, type Digest } from './trail/digest.js';
export { publishDigest, type DigestTarget } from './trail/publish-digest.js';
export { verifyTrail, type TrailCheckpoint, type TrailVerification, type VerifyOptions } from './trail/verify.js';
export { trailVerifications, type VerificationRecord } from './trail/verifications.js';
export { proveEvent, verifyProof, type TrailProof } from './trail/proof.js';
export { NotSealedError, TrailFindingsError, ProofInvalidError } from './errors.js';
export { trailStatus, type TrailStatus } from './trail/status.js';
export { blockHash, type BlockHeader } from './trail/block.js';
export { eventLink, type LinkedEvent } from './trail/event-link.js';
