// The three scenarios of the client benchmark, and the event every client sends.
// Counts are per client run; `--quick` divides them by 10 for iteration.

/** Messages per synchronous chunk of the burst; between chunks the loop yields to the event loop, as a busy server would between requests. */
export const BURST_CHUNK = 1000;

export const SCENARIOS = {
  burst: {
    name: 'burst',
    describe: (s) => `${fmt(s.count)} track calls as fast as possible (chunks of ${fmt(BURST_CHUNK)} calls, yielding to the event loop between chunks)`,
    count: 100_000,
    rate: 0,
    outageMs: 0,
  },
  paced: {
    name: 'paced',
    describe: (s) => `${fmt(s.count)} track calls at ${fmt(s.rate)}/s`,
    count: 30_000,
    rate: 5_000,
    outageMs: 0,
  },
  outage: {
    name: 'outage',
    describe: (s) =>
      `${fmt(s.count)} track calls at ${fmt(s.rate)}/s; the sink answers 503 for ${s.outageMs / 1000} s from the first request, then 200`,
    count: 20_000,
    rate: 5_000,
    outageMs: 3_000,
  },
};

export function scenarioFor(name, quick) {
  const base = SCENARIOS[name];
  if (!base) throw new Error(`Unknown scenario "${name}"; expected one of ${Object.keys(SCENARIOS).join(', ')}`);
  if (!quick) return { ...base };
  return { ...base, count: Math.round(base.count / 10) };
}

function fmt(n) {
  return n.toLocaleString('en-US');
}

const PRODUCT_NAMES = ['Wireless headphones', 'USB-C cable 2 m', 'Laptop stand', 'Mechanical keyboard'];

/**
 * The properties of one track call (about 300 bytes of JSON). Built fresh per call, as a
 * user's code would. `bench_run` and `seq` let the sink count every client the same way,
 * whatever message ids the client generates.
 */
export function properties(run, seq) {
  return {
    bench_run: run,
    seq,
    order_id: `ord_${seq.toString(36).padStart(8, '0')}`,
    revenue: (1999 + (seq % 100) * 100) / 100,
    currency: 'EUR',
    plan: seq % 3 === 0 ? 'enterprise' : 'team',
    coupon: seq % 7 === 0 ? 'SPRING24' : null,
    products: [
      { sku: `sku-${seq % 1000}`, name: PRODUCT_NAMES[seq % 4], price: 199.5, quantity: 1 },
      { sku: 'sku-cable', name: PRODUCT_NAMES[1], price: 9.9, quantity: 2 },
    ],
    page: '/checkout/confirm',
  };
}
