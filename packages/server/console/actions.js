// Review actions: confirm in a dialog, run, say what changed, reload, and give focus back to the
// row acted on (or the one that took its place).
import { confirmAction, h } from './dom.js';
import { focusPlace, restoreFocus } from './focus.js';
import { isOutage, showOutage } from './freshness.js';
import { reloadPage } from './refresh.js';

/**
 * Runs an action after the dialog confirms it, reports what it changed, then reloads the lists.
 * `destructive`: the action gives something up for good, so its dialog starts on Cancel.
 */
export async function act({ title, text, okLabel, request, describe, reload, button, destructive = false }) {
  const place = focusPlace(button);
  if (!(await confirmAction(title, text, okLabel, { destructive }))) return;
  button.disabled = true;
  const result = document.getElementById('review-result');
  try {
    result.textContent = describe(await request());
    result.className = 'muted';
  } catch (err) {
    if (isOutage(err)) showOutage(err);
    result.textContent = `Not done: ${err.message}`;
    result.className = 'error';
  }
  await reloadPage(reload);
  restoreFocus(place);
}

export const time = (iso) => new Date(iso).toLocaleString();

/** How long ago, in the largest unit that fits: "3 min". */
export function age(iso, now = Date.now()) {
  const s = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** When an item entered its state, and its age: "01/12/2026, 16:32:41 (3 min ago)". */
export const since = (iso) => h('time', { datetime: iso, 'data-since': iso }, `${time(iso)} (${age(iso)} ago)`);
