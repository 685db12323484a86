import { ROOT_CONTEXT, SpanKind, type Context } from '@opentelemetry/api';
import type { BrokerMessage, PublishAck, Publisher } from '../brokers/message.js';
import { extractTraceContext, injectTraceContext } from '../observability/trace-context.js';
import { withSpan } from '../observability/tracing.js';

/**
 * Publishes in a `rastro.relay.publish` span (kind PRODUCER), a child of the trace that wrote
 * the message (its `traceparent`). The message leaves with the span's own trace context, so the
 * consumer's span is the publish span's child. Without an SDK the message leaves as it was
 * written: its recorded `traceparent`, or none.
 */
export function publishInSpan(publisher: Publisher, message: BrokerMessage): Promise<PublishAck> {
  const parent = message.traceparent ? extractTraceContext({ traceparent: message.traceparent, tracestate: message.headers.tracestate }) : ROOT_CONTEXT;
  const attributes = {
    'messaging.system': publisher.kind,
    'messaging.operation.type': 'send',
    'messaging.message.id': message.id,
    'rastro.aggregate.type': message.aggregateType,
    'rastro.aggregate.id': message.aggregateId,
    'rastro.message.type': message.type,
  };
  return withSpan('rastro.relay.publish', attributes, (_span, ctx) => publisher.publish(traced(message, ctx)), { kind: SpanKind.PRODUCER, parent });
}

/** The message with the trace context of `ctx`; the same object when that changes nothing. */
function traced(message: BrokerMessage, ctx: Context): BrokerMessage {
  const { traceparent, tracestate } = injectTraceContext({}, ctx);
  if (traceparent === undefined || (traceparent === message.traceparent && tracestate === message.headers.tracestate)) return message;
  const headers = tracestate === undefined ? message.headers : { ...message.headers, tracestate };
  return { ...message, traceparent, headers };
}
