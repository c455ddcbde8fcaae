// Markdown tables of the client benchmark: one per scenario, every figure beside its ratio
// to the floor measured in the same run, then the targets checked for eventrelay.

const TARGET_RATIO = 1.5;
/** The Segment-compatible layer's CPU per message against eventrelay's own client (issue 12). */
const COMPAT_RATIO = 1.2;
/** Burst CPU per message against the in-memory floor (issue 19): the client as it is, and with the disk spool on. */
const BURST_CLIENT_RATIO = 1.15;
const BURST_SPOOL_RATIO = 1.5;
/** Paced and burst CPU per message against the floor (issue 42). */
const CLIENT_RATIO = 1.1;
/** The targets above, as bench/results.json notes them beside the figures. */
export const TARGETS = {
  vsFloor: TARGET_RATIO,
  segmentVsEventrelay: COMPAT_RATIO,
  burstSpoolOffVsFloor: BURST_CLIENT_RATIO,
  burstSpoolOnVsFloor: BURST_SPOOL_RATIO,
  pacedAndBurstVsFloor: CLIENT_RATIO,
};

function num(value, digits = 0) {
  if (value === undefined || value === null || Number.isNaN(value)) return '—';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function ratio(value, floorValue) {
  if (value === undefined || value === null || !floorValue) return '';
  return ` (${(value / floorValue).toFixed(2)}×)`;
}

function cell(value, floorValue, digits = 0) {
  return `${num(value, digits)}${ratio(value, floorValue)}`;
}

const STATUS_NOTE = {
  ok: '',
  incomplete: ' (gave up)',
  timeout: ' (timed out)',
  crashed: ' (crashed)',
  skipped: ' (skipped)',
};

export function scenarioTable(scenario, results) {
  const floor = results.find((r) => r.client === 'floor' && r.status === 'ok');
  const outage = scenario.outageMs > 0;
  const head = [
    'client',
    'enqueue ms',
    'total ms',
    'CPU µs/msg',
    'peak RSS MB',
    'delivered',
    'lost',
    'dup',
    'requests',
    ...(outage ? ['503s'] : []),
    'mean batch',
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  for (const r of results) {
    const approx = r.approximate ? '~' : '';
    const row = [
      `${r.label}${STATUS_NOTE[r.status] ?? ` (${r.status})`}`,
      cell(r.enqueueMs, floor?.enqueueMs),
      cell(r.totalMs, floor?.totalMs),
      approx + cell(r.cpuUsPerMsg, floor?.cpuUsPerMsg, 1),
      approx + cell(r.peakRssMB, floor?.peakRssMB, 1),
      cell(r.delivered, floor?.delivered),
      num(r.lost),
      num(r.duplicates),
      cell(r.requests, floor?.requests),
      ...(outage ? [num(r.rejected)] : []),
      cell(r.meanBatch, floor?.meanBatch, 1),
    ];
    lines.push(`| ${row.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** The issue's targets for eventrelay in one scenario, as a list of checks. */
export function targetChecks(scenario, results) {
  const floor = results.find((r) => r.client === 'floor' && r.status === 'ok');
  const ours = results.find((r) => r.client === 'eventrelay');
  if (!ours || ours.status === 'skipped') return [];
  const checks = [
    { what: 'lost', ok: ours.lost === 0, shown: num(ours.lost) },
    { what: 'duplicates', ok: ours.duplicates === 0, shown: num(ours.duplicates) },
  ];
  const ratioCheck = (what, a, b) => {
    if (a === undefined || !b) return { what, ok: false, shown: 'not measured' };
    const r = a / b;
    return { what, ok: r <= TARGET_RATIO, shown: `${r.toFixed(2)}× floor (target ≤ ${TARGET_RATIO}×)` };
  };
  checks.push(ratioCheck('CPU per message', ours.cpuUsPerMsg, floor?.cpuUsPerMsg));
  if ((scenario.name === 'burst' || scenario.name === 'paced') && ours.cpuUsPerMsg !== undefined && floor?.cpuUsPerMsg) {
    const r = ours.cpuUsPerMsg / floor.cpuUsPerMsg;
    checks.push({ what: 'CPU per message (issue 42)', ok: r <= CLIENT_RATIO, shown: `${r.toFixed(2)}× floor (target ≤ ${CLIENT_RATIO}×)` });
  }
  if (scenario.name === 'burst') {
    checks.push(ratioCheck('total time', ours.totalMs, floor?.totalMs));
    checks.push(ratioCheck('peak RSS', ours.peakRssMB, floor?.peakRssMB));
  }
  // The Segment-compatible layer must keep eventrelay's speed: within 1.2x its CPU per message.
  const segment = results.find((r) => r.client === 'eventrelay-segment' && r.status === 'ok');
  if (segment && ours.cpuUsPerMsg) {
    const r = segment.cpuUsPerMsg / ours.cpuUsPerMsg;
    checks.push({ what: 'eventrelay/segment CPU per message', ok: r <= COMPAT_RATIO, shown: `${r.toFixed(2)}× eventrelay (target ≤ ${COMPAT_RATIO}×)` });
  }
  if (scenario.name === 'burst' && floor) {
    const burstCheck = (what, row, target) => {
      if (!row || row.status !== 'ok' || row.cpuUsPerMsg === undefined) return { what, ok: false, shown: 'not measured' };
      const r = row.cpuUsPerMsg / floor.cpuUsPerMsg;
      return { what, ok: r <= target && row.lost === 0, shown: `${r.toFixed(2)}× floor, lost ${num(row.lost)} (target ≤ ${target}×, none lost)` };
    };
    checks.push(burstCheck('burst CPU per message, spool off', ours, BURST_CLIENT_RATIO));
    const spool = results.find((r) => r.client === 'eventrelay-spool');
    if (spool) checks.push(burstCheck('burst CPU per message, spool on (sync: none)', spool, BURST_SPOOL_RATIO));
  }
  return checks;
}

export function notes(results) {
  const lines = [];
  for (const r of results) {
    const parts = [];
    if (r.status !== 'ok') parts.push(`status ${r.status}${r.reason ? ` (${r.reason})` : ''}`);
    if (r.errors) parts.push(`${num(r.errors)} error event(s)/callback(s), first: ${JSON.stringify(r.firstError)}`);
    if (r.throws) parts.push(`${num(r.throws)} track call(s) threw`);
    if (r.closeError) parts.push(`close/flush rejected: ${JSON.stringify(r.closeError)}`);
    if (r.malformed) parts.push(`${num(r.malformed)} malformed request body(ies)`);
    if (r.stray) parts.push(`${num(r.stray)} message(s) the sink could not attribute`);
    if (r.approximate) parts.push('CPU and RSS read from /proc by the parent (the process did not answer), import included');
    if (parts.length) lines.push(`- ${r.label}: ${parts.join('; ')}`);
  }
  return lines;
}

/**
 * A scenario's rows for bench/results.json: each client's figures as its table rounds them, and
 * their ratios to the floor of the same run (the `(1.28×)` of the table).
 */
export function resultRows(results) {
  const floor = results.find((r) => r.client === 'floor' && r.status === 'ok');
  const digits = { enqueueMs: 0, totalMs: 0, cpuUsPerMsg: 1, peakRssMB: 1, delivered: 0, lost: 0, duplicates: 0, requests: 0, rejected: 0, meanBatch: 1 };
  const withRatio = ['enqueueMs', 'totalMs', 'cpuUsPerMsg', 'peakRssMB', 'delivered', 'requests', 'meanBatch'];
  const rows = {};
  for (const r of results) {
    if (r.status === 'skipped') continue;
    const row = {};
    for (const [field, d] of Object.entries(digits)) {
      if (typeof r[field] === 'number') row[field] = Number(r[field].toFixed(d));
    }
    const vsFloor = {};
    for (const field of withRatio) {
      if (typeof r[field] === 'number' && floor?.[field]) vsFloor[field] = Number((r[field] / floor[field]).toFixed(2));
    }
    if (Object.keys(vsFloor).length > 0) row.vsFloor = vsFloor;
    // With --repeat: the CPU ratio of each repetition to the floor's run of the same repetition.
    if (r.client !== 'floor' && r.cpuRatios?.every((v) => v !== undefined)) row.cpuVsFloorEachRun = r.cpuRatios.map((v) => Number(v.toFixed(2)));
    if (r.approximate) row.approximate = true;
    if (r.status !== 'ok') row.status = r.status;
    rows[r.client] = row;
  }
  return rows;
}
