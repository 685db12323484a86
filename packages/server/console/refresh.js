// A page's data, fetched again and again while the page shows: each round's outcome goes to the
// banner and the page's state, and keyboard focus stays where it was across the re-render.
import { focusPlace, restoreFocus } from './focus.js';
import { failed, refreshed } from './freshness.js';

/** Runs `load` (the page's fetch and render) once, reporting how it went while the page still shows. */
export async function reloadPage(load, shown = () => true) {
  const place = focusPlace();
  try {
    await load();
    if (shown()) refreshed();
  } catch (err) {
    if (shown()) failed(err);
  } finally {
    restoreFocus(place);
  }
}

/** Runs `load` every `ms` while the page shows; returns the stop function. */
export function every(ms, load) {
  let stopped = false;
  let timer;
  const tick = async () => {
    // Not while a dialog is open: re-rendering would replace the button it gives focus back to.
    if (!document.querySelector('dialog[open]')) await reloadPage(load, () => !stopped);
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
