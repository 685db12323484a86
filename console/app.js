// The console: a page per hash route, data only from the operations API (/ops).
import { api, setKeyPrompt } from './api.js';
import { renderOverview } from './overview.js';
import { renderRuns } from './runs.js';
import { renderDiff } from './diff.js';
import { renderReview } from './review.js';
import { renderAudit } from './audit.js';
import { h } from './dom.js';

const main = document.getElementById('main');
let stopPage = () => {};

/** Asks for the API key in a dialog; resolves once one is entered. */
function promptForKey(refused) {
  const dialog = document.getElementById('key-dialog');
  const input = document.getElementById('key-input');
  document.getElementById('key-error').hidden = !refused;
  input.value = '';
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(input.value), { once: true });
    dialog.showModal();
    input.focus();
  });
}
setKeyPrompt(promptForKey);

const routes = [
  { pattern: /^#\/runs\/([^/]+)\/diff$/, page: 'runs', render: (m, root) => renderDiff(root, decodeURIComponent(m[1])) },
  { pattern: /^#\/runs$/, page: 'runs', render: (_m, root) => renderRuns(root) },
  { pattern: /^#\/review$/, page: 'review', render: (_m, root) => renderReview(root) },
  { pattern: /^#\/audit$/, page: 'audit', render: (_m, root) => renderAudit(root) },
  { pattern: /^#\/overview$/, page: 'overview', render: (_m, root) => renderOverview(root) },
];

async function route() {
  stopPage();
  stopPage = () => {};
  const hash = location.hash || '#/overview';
  const found = routes.find((r) => r.pattern.test(hash)) ?? routes[routes.length - 1];
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.page === found.page) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  main.replaceChildren();
  try {
    stopPage = (await found.render(hash.match(found.pattern) ?? [], main)) ?? (() => {});
  } catch (err) {
    main.replaceChildren(h('p', { class: 'error' }, `Could not load this page: ${err.message}`));
  }
}

window.addEventListener('hashchange', () => {
  route();
  main.focus({ preventScroll: true });
});
route();
export { api };
