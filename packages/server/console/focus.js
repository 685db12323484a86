// Focus that survives a re-render. Tables are rebuilt on every refresh and after every action,
// which would drop keyboard focus to <body>: a place is remembered by what it shows (the row's
// keys, the control's name), not by the element, and found again in the new table.

const FOCUSABLE = 'button:not([disabled]), a[href], input:not([disabled]), select:not([disabled]), textarea:not([disabled])';

/**
 * Where `element` is: in a table, its row's data-* keys, its name and its row's position within
 * the section; elsewhere, its name within the closest element with an id that is kept.
 */
export function focusPlace(element = document.activeElement) {
  if (!element || element === document.body || !element.closest) return null;
  const row = element.closest('tbody tr');
  const label = element.textContent;
  if (!row) {
    const container = element.parentElement?.closest('[id]');
    return container ? { container, label } : null;
  }
  const container = row.closest('section');
  if (!container) return null;
  const keys = [...row.attributes].filter((attribute) => attribute.name.startsWith('data-'));
  const selector = `tr${keys.map((key) => `[${key.name}="${CSS.escape(key.value)}"]`).join('')}`;
  return { container, selector, label, index: [...row.parentElement.children].indexOf(row) };
}

const lost = () => !document.activeElement || document.activeElement === document.body || !document.activeElement.isConnected;

function controlIn(row, label) {
  const controls = [...row.querySelectorAll(FOCUSABLE)];
  return controls.find((control) => control.textContent === label) ?? controls[0];
}

/**
 * Puts focus back at `place` when it was lost: on the same control of the same row, else (the
 * row is gone) on the row that took its position, the next one, else the last, else on the
 * section's heading; outside a table, on the control of the same name.
 */
export function restoreFocus(place) {
  if (!place || !place.container.isConnected || !lost()) return;
  let target;
  if (place.selector) {
    const rows = [...place.container.querySelectorAll('tbody tr')];
    const row = place.container.querySelector(place.selector) ?? rows[Math.min(place.index, rows.length - 1)];
    target = row ? controlIn(row, place.label) : place.container.querySelector('h2');
  } else {
    target = controlIn(place.container, place.label);
  }
  if (!target) return;
  if (!target.matches(FOCUSABLE)) target.setAttribute('tabindex', '-1');
  target.focus();
}
