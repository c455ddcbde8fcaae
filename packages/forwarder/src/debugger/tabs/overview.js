// @ts-check
/* Endpoints (each webhook URL's health, and the disabled ones with an Enable button) and Last
 * hour (the charts and the counters): both drawn from GET /admin/overview, again every 5 s while
 * one of them shows. */
import { enableEndpoint, getOverview, isUnauthorized, messageOf } from '../api.js';
import { drawChart } from './chart.js';
import { $, clear, el, emptyRow, notice, row } from '../dom.js';

/** @typedef {import('../api.js').Overview} Overview */

const REFRESH_MS = 5000;
/** @type {ReturnType<typeof setInterval> | undefined} */
let refreshTimer;

/** Draws the overview now and every 5 s. */
export function startOverview() {
  void refreshOverview();
  refreshTimer = setInterval(refreshOverview, REFRESH_MS);
}

/** Stops drawing it again. */
export function stopOverview() {
  clearInterval(refreshTimer);
}

/**
 * Disabled webhook URLs, each with why and a button that enables it again.
 * @param {Overview['disabled']} list
 */
function showDisabled(list) {
  const tbody = $('disabled');
  clear(tbody);
  for (const d of list) {
    const tr = row([d.source, d.url, d.disabledAt, d.reason].map((value) => (value === null ? '-' : value)));
    const td = el('td');
    const button = el('button', 'Enable');
    button.type = 'button';
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        await enableEndpoint(d.source, d.url);
        notice(`Enabled ${d.url}: deliveries go to it again.`, 'info');
        await refreshOverview();
      } catch (error) {
        button.disabled = false;
        if (!isUnauthorized(error)) notice(messageOf(error));
      }
    });
    td.appendChild(button);
    tr.appendChild(td);
    tbody.appendChild(tr);
  }
  if (list.length === 0) tbody.appendChild(emptyRow('None.', 5));
}

/** The counters of "Last hour", in this order. */
const STATS = /** @type {const} */ (['accepted', 'duplicates', 'refused', 'delivered', 'retrying', 'failed', 'queueDepth', 'oldestPendingAge', 'inFlight']);

async function refreshOverview() {
  /** @type {Overview} */
  let overview;
  try {
    overview = await getOverview();
  } catch (error) {
    if (!isUnauthorized(error)) notice(messageOf(error));
    return;
  }
  const tbody = $('endpoints');
  clear(tbody);
  for (const e of overview.stats.endpoints) {
    const rate = e.successRate === null ? '-' : `${Math.round(e.successRate * 1000) / 10} %`;
    tbody.appendChild(row([e.source, e.url, e.lastStatus, e.lastError, e.consecutiveFailures, e.attempts, rate, e.p50Ms, e.p99Ms].map((value) => (value === null ? '-' : value))));
  }
  if (overview.stats.endpoints.length === 0) tbody.appendChild(emptyRow('No webhook request in the last hour.', 9));
  const instances = `${overview.instances} instance${overview.instances === 1 ? '' : 's'}`;
  $('endpoints-scope').textContent = `(last hour, ${instances})`;
  $('chart-scope').textContent = `(per minute, ${instances})`;
  showDisabled(overview.disabled || []);
  drawChart($('chart-rates'), overview.chart, [
    ['accepted', '#2457c5'],
    ['delivered', '#1f8a4c'],
    ['failed', '#c23b22'],
  ]);
  drawChart($('chart-depth'), overview.chart, [['queueDepth', '#7a4cc2']]);
  const stats = $('stats');
  clear(stats);
  stats.appendChild(el('dt', 'instances'));
  stats.appendChild(el('dd', overview.instances));
  for (const name of STATS) {
    const value = overview.stats[name];
    stats.appendChild(el('dt', name));
    stats.appendChild(el('dd', value === null ? '-' : value));
  }
}
