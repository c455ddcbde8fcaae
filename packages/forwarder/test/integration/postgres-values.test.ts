import { describe, it } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import fc from 'fast-check';
import { numberArray, pgText, textArray } from '../../src/store/postgres/pg-driver';
import { usePostgres } from '../../../../test/helpers/postgres';

describe('PostgreSQL array literals (real server)', function () {
  this.timeout(30_000);
  const db = usePostgres();

  async function roundTrip<T>(literal: string, type: string): Promise<T[]> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT $1::${type} AS v`, [literal]);
      return rows[0].v as T[];
    } finally {
      await client.end();
    }
  }

  it('reads back every string as PostgreSQL stores it, for any text (quotes, backslashes, braces, U+0000, lone surrogates)', async () => {
    const hostile = ['', 'NULL', 'null', '"', '\\', '\\"', '{}', 'a,b', ' spaced ', '\u0000', 'x\ud800y', '\udc00', '😀', '{"k":"v\\n"}'];
    // JSON texts (webhook bodies) take the fast path (JSON.stringify of the list); the others, escaping element by element.
    const values = [...hostile, ...fc.sample(fc.string({ unit: 'binary' }), 300), ...fc.sample(fc.json(), 300)];
    const back = await roundTrip<string>(textArray(values), 'text[]');
    expect(back).to.deep.equal(values.map(pgText));
  });

  it('writes a list of JSON texts as JSON.stringify does, but for its brackets', () => {
    const bodies = ['{"messageId":"a","event":"Say \\"hi\\""}', '[1,2]', null];
    expect(textArray(bodies)).to.equal(`{${JSON.stringify(bodies).slice(1, -1)}}`);
  });

  it('keeps NULL elements apart from the text "NULL"', async () => {
    expect(await roundTrip(textArray([null, 'NULL', undefined]), 'text[]')).to.deep.equal([null, 'NULL', null]);
  });

  it('writes numbers and nulls, up to epoch milliseconds', async () => {
    const values = [0, -1, 1_700_000_000_123, 2 ** 53 - 1, null];
    expect((await roundTrip<string | null>(numberArray(values), 'bigint[]')).map((v) => (v === null ? null : Number(v)))).to.deep.equal(values);
  });
});
