// Calls the operations API with the key kept in sessionStorage; asks for it on a 401.
const KEY = 'rastro.apiKey';
let askForKey = async () => null;

/** `prompt(refused)` asks for the key: resolves it, or null when the person declined (Escape). */
export function setKeyPrompt(prompt) {
  askForKey = prompt;
}

/** A problem+json answer, or a network failure (status 0), as an Error carrying the problem. */
export class ApiError extends Error {
  constructor(problem) {
    super(problem.detail ?? problem.title ?? 'request failed');
    this.problem = problem;
  }
}

let asking;
// Declined once, the key is not asked for again by the pages' polling, only from the button the
// page shows (askForKeyAgain).
let declined = false;
const keyNeeded = () => new ApiError({ status: 401, detail: 'this page needs the server\'s API key' });

async function fetched(path, init) {
  try {
    return await fetch(path, init);
  } catch {
    throw new ApiError({ status: 0, detail: 'the server did not answer' });
  }
}

async function send(path, init) {
  const key = sessionStorage.getItem(KEY);
  const headers = { accept: 'application/json, text/csv', ...(init.headers ?? {}) };
  if (key) headers.authorization = `Bearer ${key}`;
  const res = await fetched(path, { ...init, headers });
  if (res.status !== 401) return res;
  if (declined) throw keyNeeded();
  // One dialog for every request that needed the key at the same time; "refused" only when a
  // key was sent and the server said no.
  asking ??= askForKey(Boolean(key)).finally(() => (asking = undefined));
  const entered = await asking;
  if (!entered) {
    declined = true;
    throw keyNeeded();
  }
  sessionStorage.setItem(KEY, entered);
  return send(path, init);
}

/** Asks for the key again (the person declined before), then loads the page again with it. */
export function askForKeyAgain() {
  declined = false;
  window.dispatchEvent(new HashChangeEvent('hashchange'));
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
