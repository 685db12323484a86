// Review actions: confirm in a dialog, run, say what changed, reload.
import { announce, confirmAction } from './dom.js';

/** Runs an action after the dialog confirms it, reports what it changed, then reloads the lists. */
export async function act({ title, text, okLabel, request, describe, reload, button }) {
  if (!(await confirmAction(title, text, okLabel))) return;
  button.disabled = true;
  const result = document.getElementById('review-result');
  try {
    const message = describe(await request());
    announce(message);
    result.textContent = message;
  } catch (err) {
    announce(`Not done: ${err.message}`, 'error');
    result.textContent = `Not done: ${err.message}`;
  } finally {
    await reload();
  }
}

export const time = (iso) => new Date(iso).toLocaleString();
