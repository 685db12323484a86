// Whether what the console shows is current. While the server cannot give its data (it is down,
// or its database is), a banner says so with the error and the time of the last good update,
// and the page that failed shows its own error state, over its stale data or instead of none.
// The next good answer takes both away: the pages keep polling, so recovery needs nobody.
import { askForKeyAgain } from './api.js';
import { h } from './dom.js';

let lastGood;
let pageLoadedAt;
const clock = (date) => date.toLocaleTimeString();

/** An answer that says the server or its database is away (no answer, or a 5xx), rather than that the request was wrong. */
export const isOutage = (err) => err.problem !== undefined && (err.problem.status === 0 || err.problem.status >= 500);

/** A new page: nothing loaded on it yet, no error of the last one. */
export function resetPage() {
  pageLoadedAt = undefined;
  document.getElementById('main').removeAttribute('data-stale');
}

/** The page's data arrived. */
export function refreshed() {
  lastGood = pageLoadedAt = new Date();
  document.getElementById('outage').hidden = true;
  document.getElementById('updated').textContent = `updated ${clock(lastGood)}`;
  document.getElementById('main').removeAttribute('data-stale');
  document.getElementById('page-state')?.replaceChildren();
}

/** The banner: shown for an outage, from a page's refresh or from an action. */
export function showOutage(err) {
  const banner = document.getElementById('outage');
  const text = `The console cannot get fresh data: ${err.message}. Last good update: ${lastGood ? clock(lastGood) : 'none since this page was opened'}. It keeps trying on its own.`;
  // Rewritten only when it changes: the banner is an alert, read out at each change.
  if (banner.textContent !== text) banner.textContent = text;
  banner.hidden = false;
}

function keyNeeded() {
  return h('div', { class: 'page-error' },
    h('p', {}, 'This page needs the server\'s API key (RASTRO_API_KEY).'),
    h('button', { type: 'button', class: 'primary', onclick: () => askForKeyAgain() }, 'Enter the API key'));
}

/** A request of the page failed: its error state, and the banner when the server is away. */
export function failed(err) {
  if (isOutage(err)) showOutage(err);
  const state = document.getElementById('page-state');
  if (!state) return;
  if (err.problem?.status === 401) return state.replaceChildren(keyNeeded());
  // Data shown from an earlier answer stays, marked as stale.
  document.getElementById('main').toggleAttribute('data-stale', Boolean(pageLoadedAt));
  state.replaceChildren(h('p', { class: 'page-error', role: 'status' }, pageLoadedAt
    ? `Could not refresh this page: ${err.message}. It shows what was loaded at ${clock(pageLoadedAt)}.`
    : `Could not load this page: ${err.message}. It tries again on its own.`));
}
