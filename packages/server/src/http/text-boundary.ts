import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RastroError } from 'rastro/internal/errors.js';
import { findUnstorableText, unstorableReason } from 'rastro/internal/store/storable-text.js';

/**
 * Text refused where it enters, before any route runs: U+0000, a lone UTF-16 surrogate, or
 * bytes that are not UTF-8. `field` names it as the client wrote it; `status` is 422 for a
 * string inside a JSON body and 400 for a parameter, a header, or a body that is not UTF-8.
 */
export class UnstorableTextError extends RastroError {
  readonly field: string | undefined;
  readonly status: 400 | 422;

  constructor(status: 400 | 422, field: string | undefined, reason: string) {
    super('RASTRO_UNSTORABLE_TEXT', field === undefined ? reason : `${field}: ${reason}`);
    this.status = status;
    this.field = field;
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The first query parameter whose percent-encoding is not UTF-8 (`%FF`, an encoded surrogate). */
function badlyEncodedQueryName(url: string): string | undefined {
  const start = url.indexOf('?');
  if (start < 0) return undefined;
  for (const pair of url.slice(start + 1).split('&')) {
    const [name = '', value = ''] = pair.split(/=(.*)/s);
    const decode = (part: string) => decodeURIComponent(part.replace(/\+/g, ' '));
    try {
      decode(value);
      decode(name);
    } catch {
      try {
        return decode(name);
      } catch {
        return name;
      }
    }
  }
  return undefined;
}

function checkParts(request: FastifyRequest): void {
  const badName = badlyEncodedQueryName(request.url);
  if (badName !== undefined) throw new UnstorableTextError(400, badName, 'is not valid UTF-8 once percent-decoded');
  const parts = [request.query, request.params] as const;
  for (const part of parts) {
    const found = findUnstorableText(part);
    if (found) throw new UnstorableTextError(400, found.field, found.reason);
  }
  for (const [name, value] of Object.entries(request.headers)) {
    for (const text of Array.isArray(value) ? value : [value ?? '']) {
      const reason = unstorableReason(text);
      if (reason) throw new UnstorableTextError(400, name, reason);
    }
  }
}

/**
 * The one boundary rule for text: every JSON body (strings and object keys, to any depth) is
 * checked as it is parsed, and every query parameter, path parameter and header before
 * validation, so no route ever passes the database a string it cannot store.
 *
 * @example
 * ```ts
 * const app = Fastify()
 * textBoundary(app)   // before the routes are registered
 * ```
 */
export function textBoundary(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = strictUtf8.decode(body as Buffer);
    } catch {
      return done(new UnstorableTextError(400, undefined, 'the body is not valid UTF-8; send JSON encoded as UTF-8'), undefined);
    }
    parseJson(request, text, (err, value) => {
      if (err) return done(err, undefined);
      const found = findUnstorableText(value);
      if (found) return done(new UnstorableTextError(422, found.field, found.reason), undefined);
      done(null, value);
    });
  });
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      checkParts(request);
    } catch (err) {
      return done(err as UnstorableTextError);
    }
    done();
  });
}
