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
  return element;
}

export function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined && value !== null) element.setAttribute(name, String(value));
  element.append(...children.map((child) => (child instanceof Node ? child : document.createTextNode(String(child)))));
  return element;
}

/** Shows a short message in the status region (read by screen readers). */
export function announce(text, kind = 'info') {
  const region = document.getElementById('status');
  const message = h('p', { class: kind }, text);
  region.append(message);
  setTimeout(() => message.remove(), 8000);
}

/** Asks to confirm an action in a modal dialog; resolves true on Confirm. */
export function confirmAction(title, text, okLabel = 'Confirm') {
  const dialog = document.getElementById('confirm-dialog');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = okLabel;
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.returnValue = '';
    dialog.showModal();
    document.getElementById('confirm-ok').focus();
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

/** Polls `fn` every `ms` while the page shows; returns the stop function. */
export function every(ms, fn) {
  let stopped = false;
  let timer;
  const tick = async () => {
    try {
      await fn();
    } finally {
      if (!stopped) timer = setTimeout(tick, ms);
    }
  };
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
