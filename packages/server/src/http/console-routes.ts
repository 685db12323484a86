import { readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { sendProblem } from './problem.js';

/** The console's static files ship in the package's console/ folder, beside dist/ and src/. */
export const CONSOLE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'console');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Serves the console at /console: the files of {@link CONSOLE_DIR}, read once at start, by
 * name only (no path from the request reaches the file system). The pages are static; their
 * data comes from /ops with the key the page asks for.
 */
export async function consoleRoutes(app: FastifyInstance, options: { dir?: string } = {}): Promise<void> {
  const dir = options.dir ?? CONSOLE_DIR;
  const files = new Map<string, { body: Buffer; type: string }>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { body: readFileSync(join(dir, name)), type });
  }
  const headers = {
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
  };
  app.get('/console', { schema: { hide: true } }, (_request, reply) => reply.redirect('/console/'));
  // The address serve prints leads somewhere: the console.
  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect('/console/'));
  app.get<{ Params: { file?: string } }>('/console/:file', { schema: { hide: true } }, (request, reply) => {
    const file = files.get(request.params.file || 'index.html');
    if (!file) return sendProblem(reply, 404, `no console file ${JSON.stringify(request.params.file)}`);
    return reply.headers(headers).type(file.type).send(file.body);
  });
}
