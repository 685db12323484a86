// The console: a page per hash route, data only from the operations API (/ops).
import { api, setKeyPrompt } from './api.js';
import { renderOverview } from './overview.js';
import { renderRuns } from './runs.js';
import { renderDiff } from './diff.js';
import { renderReview } from './review.js';
import { renderAudit } from './audit.js';
import { renderTrail } from './trail.js';
import { answerOf, clearAnnouncement, h } from './dom.js';
import { failed, isOutage, resetPage } from './freshness.js';

const main = document.getElementById('main');
let stopPage = () => {};

/** Asks for the API key in a dialog; resolves the key entered, or null on Escape. */
function promptForKey(refused) {
  const dialog = document.getElementById('key-dialog');
  const input = document.getElementById('key-input');
  document.getElementById('key-error').hidden = !refused;
  input.value = '';
  const answer = answerOf(dialog);
  dialog.showModal();
  input.focus();
  return answer.then((value) => (value === null ? null : input.value));
}
setKeyPrompt(promptForKey);

const routes = [
  { pattern: /^#\/runs\/([^/]+)\/diff$/, page: 'runs', render: (m, root) => renderDiff(root, decodeURIComponent(m[1])) },
  { pattern: /^#\/runs$/, page: 'runs', render: (_m, root) => renderRuns(root) },
  { pattern: /^#\/review$/, page: 'review', render: (_m, root) => renderReview(root) },
  { pattern: /^#\/audit$/, page: 'audit', render: (_m, root) => renderAudit(root) },
  { pattern: /^#\/trail$/, page: 'trail', render: (_m, root) => renderTrail(root) },
  { pattern: /^#\/overview$/, page: 'overview', render: (_m, root) => renderOverview(root) },
];
// A page that could not even start (its first request failed) is loaded again after this long.
const RETRY_MS = 10_000;

async function route() {
  stopPage();
  let stopped = false;
  stopPage = () => (stopped = true);
  clearAnnouncement();
  resetPage();
  const hash = location.hash || '#/overview';
  const found = routes.find((r) => r.pattern.test(hash)) ?? routes[routes.length - 1];
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.page === found.page) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  // Each page renders into its own element: one still loading when the person moves on writes
  // into an element no longer shown.
  const root = h('div', { class: 'page' });
  main.replaceChildren(h('div', { id: 'page-state' }), root);
  try {
    const stop = (await found.render(hash.match(found.pattern) ?? [], root)) ?? (() => {});
    if (stopped) return stop();
    stopPage = stop;
  } catch (err) {
    if (stopped) return;
    failed(err);
    if (!isOutage(err)) return;
    const retry = setTimeout(route, RETRY_MS);
    stopPage = () => clearTimeout(retry);
  }
}

window.addEventListener('hashchange', () => {
  route();
  main.focus({ preventScroll: true });
});
route();
export { api };
