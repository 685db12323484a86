import { describe, expect, it } from 'vitest';
import { DatabaseError } from '../../packages/rastro/src/errors.js';
import { backends, freshSchema } from '../support/databases.js';

describe.each(backends())('a transaction on $name', (backend) => {
  it('rejects with what its callback threw, as it was, and rolls back', async () => {
    const { db, schema } = await freshSchema(backend);
    await db.query(`create table "${schema}".t (n int)`);
    // A caller tells its own errors apart by class (a batch that must be split, a lost partition).
    class Refused extends Error {}
    const refused = new Refused('from the callback');
    await expect(db.transaction(async (tx) => {
      await tx.query(`insert into "${schema}".t values (1)`);
      throw refused;
    })).rejects.toBe(refused);
    expect((await db.query<{ n: number }>(`select count(*)::int as n from "${schema}".t`)).rows[0]!.n).toBe(0);
    // A statement's error is the database's, converted as every statement's is.
    await expect(db.transaction((tx) => tx.query('select 1 / 0'))).rejects.toBeInstanceOf(DatabaseError);
  });
});
