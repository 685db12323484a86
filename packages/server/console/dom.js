// Small DOM helpers: elements from code, text always as text (never as HTML).

/** h('button', { class: 'primary', onclick }, 'Retry') */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  element.append(...children.flat().filter((child) => child !== null && child !== undefined && child !== false).map((child) => (child instanceof Node ? child : String(child))));
  if (tag === 'table') labelCells(element);
  return element;
}

/** Each cell carries its column's heading, which narrow screens show beside it (a row becomes a card). */
function labelCells(table) {
  const headings = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
  for (const row of table.querySelectorAll('tbody tr')) [...row.children].forEach((cell, i) => (cell.dataset.label = headings[i] ?? ''));
}

export function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined && value !== null) element.setAttribute(name, String(value));
  element.append(...children.map((child) => (child instanceof Node ? child : document.createTextNode(String(child)))));
  return element;
}

let announced;

/**
 * Shows a short message in the status region under the header (read by screen readers): one at a
 * time, in the page's flow so it never covers a button, gone after 8 s or on another page.
 */
export function announce(text, kind = 'info') {
  clearAnnouncement();
  const message = h('p', { class: kind }, text);
  document.getElementById('status').append(message);
  announced = setTimeout(clearAnnouncement, 8000);
}

export function clearAnnouncement() {
  clearTimeout(announced);
  document.getElementById('status').replaceChildren();
}

/**
 * Asks to confirm an action in a modal dialog; resolves true on Confirm. A `destructive` action
 * (one that gives something up for good) starts on Cancel, so a stray Enter changes nothing.
 */
export function confirmAction(title, text, okLabel = 'Confirm', { destructive = false } = {}) {
  const dialog = document.getElementById('confirm-dialog');
  const ok = document.getElementById('confirm-ok');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  ok.textContent = okLabel;
  ok.classList.toggle('danger', destructive);
  const answer = answerOf(dialog);
  dialog.showModal();
  (destructive ? dialog.querySelector('button[value="cancel"]') : ok).focus();
  return answer.then((value) => value === 'ok');
}

/**
 * Shows how a modal dialog about to open is answered: the value of the button that submitted its
 * form, '' for one without a value, null when it was dismissed (Escape). It listens to the
 * answer itself, not to the dialog's `close` event, which the browser dispatches in a later task:
 * a dialog closed and opened again at once would take the first closing for the second answer.
 */
export function answerOf(dialog) {
  const form = dialog.querySelector('form');
  return new Promise((resolve) => {
    const done = (value) => {
      form.removeEventListener('submit', onSubmit);
      dialog.removeEventListener('cancel', onCancel);
      dialog.removeEventListener('close', onClose);
      resolve(value);
    };
    const onSubmit = (event) => done(event.submitter?.value ?? '');
    const onCancel = () => done(null);
    // Closed another way (a repeated Escape closes without a cancel event); a late close of an
    // earlier opening finds the dialog open again, and is not this answer.
    const onClose = () => {
      if (!dialog.open) done(null);
    };
    form.addEventListener('submit', onSubmit);
    dialog.addEventListener('cancel', onCancel);
    dialog.addEventListener('close', onClose);
  });
}

export function json(value) {
  return value === null || value === undefined ? '—' : JSON.stringify(value, null, 1);
}

export function seconds(value) {
  if (value === null || value === undefined) return '—';
  if (value === 0) return '0 s';
  if (value < 1) return `${Math.round(value * 1000)} ms`;
  if (value < 120) return `${value.toFixed(1)} s`;
  return `${Math.round(value / 60)} min`;
}
