// Calls the operations API with the key kept in sessionStorage; asks for it on a 401.
const KEY = 'rastro.apiKey';
let askForKey = async () => '';

export function setKeyPrompt(prompt) {
  askForKey = prompt;
}

/** A problem+json answer, or a network failure, as an Error carrying the problem. */
export class ApiError extends Error {
  constructor(problem) {
    super(problem.detail ?? problem.title ?? 'request failed');
    this.problem = problem;
  }
}

let asking;

async function send(path, init, refused = false) {
  const key = sessionStorage.getItem(KEY);
  const headers = { accept: 'application/json, text/csv', ...(init.headers ?? {}) };
  if (key) headers.authorization = `Bearer ${key}`;
  const res = await fetch(path, { ...init, headers });
  if (res.status === 401) {
    // One dialog for every request that needed the key at the same time.
    asking ??= askForKey(refused || Boolean(key)).finally(() => (asking = undefined));
    const entered = await asking;
    if (entered) sessionStorage.setItem(KEY, entered);
    return send(path, init, true);
  }
  return res;
}

/** GET or POST a JSON document under /ops; throws {@link ApiError} with the problem on 4xx/5xx. */
export async function api(path, { method = 'GET', body } = {}) {
  const init = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const res = await send(path, init);
  const type = res.headers.get('content-type') ?? '';
  if (!res.ok) throw new ApiError(type.includes('json') ? await res.json() : { status: res.status, detail: res.statusText });
  return type.includes('json') ? res.json() : res.text();
}
