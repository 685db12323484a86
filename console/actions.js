// Review actions: confirm in a dialog, run, say what changed, reload, and give focus back to the
// row acted on (or the one that took its place).
import { confirmAction } from './dom.js';
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
