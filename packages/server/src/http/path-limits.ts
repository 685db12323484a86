import { MAX_ORDER_KEY_LENGTH } from 'rastro/internal/intake/order-snapshot.js';

/** The longest effect key the operations API takes: `<event id>:<effect type>`. */
export const MAX_EFFECT_KEY_LENGTH = 300;
/** The longest run id (`runIdPattern`). */
export const MAX_RUN_ID_LENGTH = 100;

/**
 * The router's limit on one path parameter, from the data model's longest identifier that
 * travels in a path: an effect key, an order's `<source>:<orderId>`, a run id — three times
 * over, since each character may arrive percent-encoded (`%3A`). Fastify's default (100) made
 * valid items unreachable. The route's schema then holds each parameter to its own maximum and
 * names it when it is longer; a parameter longer than this is refused by the router (400).
 */
export const MAX_PATH_PARAM_LENGTH = 3 * Math.max(MAX_EFFECT_KEY_LENGTH, MAX_ORDER_KEY_LENGTH, MAX_RUN_ID_LENGTH);
