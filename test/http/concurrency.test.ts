import { describe, expect, it, onTestFinished } from 'vitest';
import { backends } from '../support/databases.js';
import { testApp, type TestApp } from '../support/app.js';

/** Listens on a real socket and returns a fetch-based client. */
async function listening(t: TestApp) {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  onTestFinished(() => t.app.close());
  const address = t.app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return (path: string, body?: unknown) =>
    fetch(`${base}${path}`, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
}

describe.each(backends())('concurrent writes on $name', (backend) => {
  it('lets exactly 10 of 40 concurrent withdrawals of 100 from 1,000 succeed, over a real socket', async () => {
    const t = await testApp(backend);
    const http = await listening(t);
    const id = await t.openAccount();
    await t.post(`/accounts/${id}/deposit`, { amount: 1_000 });
    const responses = await Promise.all(Array.from({ length: 40 }, () => http(`/accounts/${id}/withdraw`, { amount: 100 })));
    const statuses = responses.map((res) => res.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(10);
    expect(statuses.filter((status) => status !== 201 && status !== 422 && status !== 409)).toEqual([]);
    const balance = await (await http(`/accounts/${id}/balance`)).json();
    expect(balance).toMatchObject({ balance: 0, version: 12 });
    const bodies = await Promise.all(responses.filter((res) => res.status === 422).map((res) => res.json()));
    expect(bodies.every((body) => body.code === 'RASTRO_INSUFFICIENT_FUNDS')).toBe(true);
  });

  it('applies every one of 30 concurrent deposits to one account', async () => {
    const t = await testApp(backend);
    const http = await listening(t);
    const id = await t.openAccount();
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => http(`/accounts/${id}/deposit`, { amount: i + 1 })));
    expect(responses.map((res) => res.status).filter((status) => status !== 201)).toEqual([]);
    expect(await (await http(`/accounts/${id}/balance`)).json()).toMatchObject({ balance: 465, version: 31 });
  });
});
