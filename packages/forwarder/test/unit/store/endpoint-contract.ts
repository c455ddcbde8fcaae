import { describe, it, beforeEach, afterEach } from 'mocha';
import { expect } from 'chai';
import type { DisableRule, EndpointReport, EndpointStore } from '../../../src/store/contract';

const HOUR = 3_600_000;
export const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const RULE: DisableRule = { after: 24 * HOUR, minAttempts: 10 };

/** `n` failures spread evenly from `from` to `to`, as one report (what 200 ms of outcomes fold into). */
export function failures(n: number, from: number, to: number, extra: Partial<EndpointReport> = {}): EndpointReport {
  const lastError = 'HTTP 503: answered HTTP 503';
  return { source: 'web', key: 'k1', url: 'https://hooks.example.test/in', reset: false, failures: n, firstFailureAt: from, lastFailureAt: to, lastError, ...extra };
}

const success = (extra: Partial<EndpointReport> = {}): EndpointReport => ({ source: 'web', key: 'k1', url: 'https://hooks.example.test/in', reset: true, failures: 0, ...extra });

/**
 * The endpoint states every store keeps (`delivery.disableAfter`): a URL is disabled once every
 * attempt failed for 24 h with at least 10 attempts, exactly once; a success starts over; an
 * operator enables it again. `open` gives a store over an empty table; `reopen` one over the same
 * data (a restart, or another instance), when the store keeps any.
 */
type Opened = { endpoints: EndpointStore; close: () => Promise<void> };

export function endpointContract(name: string, open: () => Promise<Opened>, reopen?: () => Promise<Opened>): void {
  describe(`${name} (endpoint states)`, function () {
    this.timeout(20_000);
    let endpoints: EndpointStore;
    const closers: (() => Promise<void>)[] = [];
    beforeEach(async () => {
      const opened = await open();
      endpoints = opened.endpoints;
      closers.push(opened.close);
    });
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    it('disables a URL once every attempt failed for 24 h, with at least 10 attempts, in the report that gets there', async () => {
      const first = await endpoints.report([failures(5, T0, T0 + 12 * HOUR)], RULE);
      expect(first.disabled).to.deep.equal([]);
      expect(first.states[0]).to.deep.include({ failures: 5, failingSince: T0, lastFailureAt: T0 + 12 * HOUR, disabledAt: undefined });
      // 9 attempts over 25 h: not yet, too few.
      expect((await endpoints.report([failures(4, T0 + 13 * HOUR, T0 + 25 * HOUR)], RULE)).disabled).to.deep.equal([]);
      const tenth = await endpoints.report([failures(1, T0 + 26 * HOUR, T0 + 26 * HOUR)], RULE);
      expect(tenth.disabled).to.have.length(1);
      const state = tenth.disabled[0]!;
      expect(state).to.deep.include({ source: 'web', key: 'k1', failures: 10, failingSince: T0, disabledAt: T0 + 26 * HOUR });
      expect(state.disabledReason).to.equal('Every attempt failed for 26 h (10 attempts since 2026-03-01T00:00:00.000Z); last error: HTTP 503: answered HTTP 503');
      // Once: more failures do not disable it again.
      expect((await endpoints.report([failures(3, T0 + 27 * HOUR, T0 + 28 * HOUR)], RULE)).disabled).to.deep.equal([]);
      expect((await endpoints.list()).map((s) => [s.key, s.disabledAt, s.failures])).to.deep.equal([['k1', T0 + 26 * HOUR, 13]]);
    });

    it('needs the time as well: 10 attempts within 23 h are not enough', async () => {
      expect((await endpoints.report([failures(50, T0, T0 + 23 * HOUR)], RULE)).disabled).to.deep.equal([]);
      expect((await endpoints.report([failures(1, T0 + 24 * HOUR, T0 + 24 * HOUR)], RULE)).disabled).to.have.length(1);
    });

    it('starts over after a success: the failures before it do not count', async () => {
      await endpoints.report([failures(20, T0, T0 + 20 * HOUR)], RULE);
      const after = await endpoints.report([{ ...failures(2, T0 + 21 * HOUR, T0 + 22 * HOUR), reset: true }], RULE);
      expect(after.states[0]).to.deep.include({ failures: 2, failingSince: T0 + 21 * HOUR });
      expect((await endpoints.report([failures(10, T0 + 30 * HOUR, T0 + 44 * HOUR)], RULE)).disabled).to.deep.equal([]);
      const healthy = await endpoints.report([success()], RULE);
      expect(healthy.states[0]).to.deep.include({ failures: 0, failingSince: undefined });
    });

    it('disables a URL at its first 410 Gone, once, whatever disableAfter says', async () => {
      const gone = { lastError: 'HTTP 410: https://hooks.example.test/in answered HTTP 410 (Gone: final for this URL, not retried)', gone: true };
      for (const rule of [RULE, { after: 0, minAttempts: 10 }]) {
        const key = `gone-${rule.after}`;
        const result = await endpoints.report([failures(1, T0 + HOUR, T0 + HOUR, { ...gone, key })], rule);
        expect(result.disabled).to.have.length(1);
        expect(result.disabled[0]).to.deep.include({ key, failures: 1, disabledAt: T0 + HOUR });
        expect(result.disabled[0]!.disabledReason).to.equal(
          'The receiver answered 410 Gone at 2026-03-01T01:00:00.000Z: it takes no more deliveries at this URL; last error: ' + gone.lastError,
        );
        expect((await endpoints.report([failures(1, T0 + 2 * HOUR, T0 + 2 * HOUR, { ...gone, key })], rule)).disabled).to.deep.equal([]);
      }
      // Another answer than 410 does not disable at once.
      expect((await endpoints.report([failures(1, T0, T0, { lastError: 'HTTP 401: answered HTTP 401' })], RULE)).disabled).to.deep.equal([]);
    });

    it('never disables with disableAfter 0', async () => {
      expect((await endpoints.report([failures(1000, T0, T0 + 400 * HOUR)], { after: 0, minAttempts: 10 })).disabled).to.deep.equal([]);
    });

    it('keeps sources and URLs apart, and enables a disabled URL once, clearing its run of failures', async () => {
      const other = failures(10, T0, T0 + 24 * HOUR, { key: 'k2', url: 'https://other.example.test/in' });
      const both = await endpoints.report([failures(10, T0, T0 + 24 * HOUR), other, failures(3, T0, T0 + 24 * HOUR, { source: 'ios' })], RULE);
      expect(both.disabled.map((s) => [s.source, s.key])).to.deep.equal([
        ['web', 'k1'],
        ['web', 'k2'],
      ]);
      expect(await endpoints.enable('web', 'k9', T0)).to.equal(undefined);
      const before = await endpoints.enable('web', 'k1', T0 + 25 * HOUR);
      expect(before).to.deep.include({ key: 'k1', disabledAt: T0 + 24 * HOUR, lastError: 'HTTP 503: answered HTTP 503' });
      expect(await endpoints.enable('web', 'k1', T0 + 25 * HOUR)).to.equal(undefined);
      const listed = new Map((await endpoints.list()).map((s) => [`${s.source} ${s.key}`, s]));
      expect(listed.get('web k1')).to.deep.include({ disabledAt: undefined, disabledReason: undefined, failures: 0, failingSince: undefined, lastError: 'HTTP 503: answered HTTP 503' });
      expect(listed.get('web k2')!.disabledAt).to.equal(T0 + 24 * HOUR);
      expect(listed.get('ios k1')!.disabledAt).to.equal(undefined);
      // Enabled, it takes a new run of 24 h to be disabled again.
      expect((await endpoints.report([failures(10, T0 + 26 * HOUR, T0 + 49 * HOUR)], RULE)).disabled).to.deep.equal([]);
    });

    if (reopen !== undefined) {
      it('keeps the states across a restart (another store on the same data)', async () => {
        await endpoints.report([failures(10, T0, T0 + 24 * HOUR)], RULE);
        const again = await reopen();
        closers.push(again.close);
        expect((await again.endpoints.list()).map((s) => [s.key, s.disabledAt])).to.deep.equal([['k1', T0 + 24 * HOUR]]);
      });
    }
  });
}
