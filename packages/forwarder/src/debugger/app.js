/* The eventrelay debugger. Plain script, no framework. Every value from the server is shown with
 * textContent, never parsed as HTML: payloads come from anyone holding a write key. The admin
 * token lives in sessionStorage and travels only in the Authorization header. */
/* global URLSearchParams */
'use strict';

(() => {
  const TOKEN_KEY = 'eventrelay.adminToken';
  const LIVE_LIMIT = 500;
  /** Calls read from the delivery log when the live view starts: it opens with the latest ones. */
  const LIVE_BACKLOG = 100;
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);

  let token = sessionStorage.getItem(TOKEN_KEY);
  let streamControl;
  let paused = false;
  /** Live items, newest first: { key, source, messageId, type, event, userId, receivedAt, state, body, reason, attempts } */
  let liveItems = [];
  const liveByKey = new Map();
  let detail;
  let searchCursor = null;
  let refreshTimer;

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function notice(text, kind) {
    const node = $('notice');
    node.textContent = text || '';
    node.className = kind === 'info' ? 'info' : '';
    node.hidden = !text;
  }

  function time(iso) {
    return iso ? new Date(iso).toLocaleTimeString() : '';
  }

  async function api(path, options) {
    const init = { method: 'GET', cache: 'no-store', headers: { Authorization: `Bearer ${token}` } };
    if (options && options.body !== undefined) {
      init.method = options.method || 'POST';
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(options.body);
    } else if (options && options.method) {
      init.method = options.method;
    }
    const response = await fetch(path, init);
    const text = await response.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (response.status === 401) {
      signOut('The admin token was refused: sign in again.');
      throw new Error('unauthorized');
    }
    if (!response.ok) {
      const error = json && json.error;
      throw new Error(error ? `${error.message}${error.field ? ` (${error.field})` : ''}` : `HTTP ${response.status}`);
    }
    return json;
  }

  // ---- views ---------------------------------------------------------------------------------

  function show(next) {
    for (const section of document.querySelectorAll('.view')) section.hidden = section.id !== `view-${next}`;
    for (const tab of document.querySelectorAll('.tab')) tab.setAttribute('aria-selected', String(tab.dataset.view === next));
    clearInterval(refreshTimer);
    if (next === 'endpoints' || next === 'chart') {
      refreshOverview();
      refreshTimer = setInterval(refreshOverview, 5000);
    }
    if (next === 'search' && $('search-results').childElementCount === 0) search(false);
    if (next === 'sources') loadSources();
    if (next === 'schema') loadSchema();
  }

  function fillSources(sources) {
    for (const id of ['live-source', 'search-source', 'recover-source', 'schema-source']) {
      const select = $(id);
      const before = select.value;
      clear(select);
      if (id !== 'recover-source' && id !== 'schema-source') select.appendChild(el('option', 'all')).value = '';
      for (const name of sources) select.appendChild(el('option', name)).value = name;
      // A list made again keeps the source picked, while it is still there.
      if (before && sources.includes(before)) select.value = before;
    }
  }

  async function signIn() {
    try {
      const overview = await api('/admin/overview');
      fillSources(overview.sources);
      $('view-signin').hidden = true;
      $('tabs').hidden = false;
      notice('');
      show('live');
      startStream();
    } catch (error) {
      if (error.message !== 'unauthorized') notice(`Could not sign in: ${error.message}`);
    }
  }

  function signOut(message) {
    token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    // A write key shown once must not outlive the session on screen.
    $('key-value').value = '';
    $('key-box').hidden = true;
    closeEditor();
    if (streamControl) streamControl.abort();
    clearInterval(refreshTimer);
    $('tabs').hidden = true;
    for (const section of document.querySelectorAll('.view')) section.hidden = section.id !== 'view-signin';
    notice(message || '');
  }

  // ---- live stream (fetch streaming, so the token stays in a header) ----------------------------

  function startStream() {
    if (streamControl) streamControl.abort();
    const control = new AbortController();
    streamControl = control;
    const source = $('live-source').value;
    const path = `/admin/stream${source ? `?${new URLSearchParams({ source })}` : ''}`;
    $('live-status').textContent = 'connecting';
    fetch(path, { headers: { Authorization: `Bearer ${token}` }, signal: control.signal, cache: 'no-store' })
      .then(async (response) => {
        if (response.status === 401) return signOut('The admin token was refused: sign in again.');
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        $('live-status').textContent = 'live';
        // Connected first, then read: a call accepted in between is in both, and shown once.
        void loadRecent(control, source);
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            parseEvent(block);
          }
        }
        throw new Error('stream ended');
      })
      .catch((error) => {
        if (control.signal.aborted) return;
        $('live-status').textContent = `disconnected (${error.message}); retrying`;
        setTimeout(() => {
          if (streamControl === control && token) startStream();
        }, 2000);
      });
  }

  /** A duplicate or a refused call is a line of its own beside the call it repeats: '' for the call itself. */
  function kindOf(item) {
    return item.state === 'duplicate' || item.state === 'refused' ? item.state : '';
  }

  /** The latest calls of the delivery log, under those that streamed in since the stream opened. */
  async function loadRecent(control, source) {
    const params = new URLSearchParams({ limit: String(LIVE_BACKLOG) });
    if (source) params.set('source', source);
    let page;
    try {
      page = await api(`/admin/messages?${params}`);
    } catch (error) {
      if (error.message !== 'unauthorized' && streamControl === control) notice(`Could not read the latest calls: ${error.message}`);
      return;
    }
    // The source was changed, or the stream opened again, while this was read.
    if (streamControl !== control) return;
    const shown = new Set(liveItems.map((item) => `${item.key}\u0000${kindOf(item)}`));
    const added = [];
    for (const row of page.items) {
      const key = `${row.source}\u0000${row.messageId}`;
      // A duplicate or a refused call is a line of its own in the log and in the stream.
      const kind = kindOf({ state: row.status });
      if (shown.has(`${key}\u0000${kind}`)) continue;
      shown.add(`${key}\u0000${kind}`);
      const item = {
        key,
        source: row.source,
        messageId: row.messageId,
        type: row.type,
        event: row.event,
        userId: row.userId,
        receivedAt: row.receivedAt,
        state: row.status,
        body: null,
        reason: row.reason || `messageId ${row.messageId}: click to open`,
        attempts: [],
        loaded: true,
      };
      added.push(item);
      const mine = liveByKey.get(key);
      if (mine === undefined || (kind === '' && kindOf(mine) !== '')) liveByKey.set(key, item);
    }
    // Newest first: what streamed in is newer than what the log held, ties kept in that order.
    liveItems = liveItems.concat(added).sort((a, b) => (a.receivedAt < b.receivedAt ? 1 : a.receivedAt > b.receivedAt ? -1 : 0));
    if (liveItems.length > LIVE_LIMIT) {
      for (const old of liveItems.splice(LIVE_LIMIT)) if (liveByKey.get(old.key) === old) liveByKey.delete(old.key);
    }
    if (!paused) renderLive();
  }

  function parseEvent(block) {
    let event = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    }
    if (data.length === 0) return;
    let payload;
    try {
      payload = JSON.parse(data.join('\n'));
    } catch {
      return;
    }
    onLiveEvent(event, payload);
  }

  function onLiveEvent(event, data) {
    const key = `${data.source}\u0000${data.messageId}`;
    if (event === 'accepted' || event === 'refused') {
      const item = {
        key,
        loaded: false,
        source: data.source,
        messageId: data.messageId,
        type: data.type,
        event: data.event || null,
        userId: data.userId,
        receivedAt: data.receivedAt,
        state: event === 'refused' ? 'refused' : data.state,
        body: data.body,
        // Relayed from another instance without its body (too large for a notification).
        reason: data.reason || (data.bodyOmitted ? 'Body too large to relay from the instance that accepted it: click to open the message.' : null),
        attempts: [],
      };
      // Read from the log while its notice was on the way: the same call, shown once.
      const twin = liveItems.findIndex((other) => other.loaded && other.key === key && kindOf(other) === kindOf(item));
      if (twin >= 0) {
        item.state = liveItems[twin].state;
        if (liveByKey.get(key) === liveItems[twin]) liveByKey.set(key, item);
        liveItems[twin] = item;
        if (!paused) renderLive();
        return;
      }
      liveItems.unshift(item);
      if (!liveByKey.has(key) || event !== 'refused') liveByKey.set(key, item);
      if (liveItems.length > LIVE_LIMIT) {
        for (const old of liveItems.splice(LIVE_LIMIT)) if (liveByKey.get(old.key) === old) liveByKey.delete(old.key);
      }
    } else if (event === 'attempt' || event === 'replayed') {
      const item = liveByKey.get(key);
      if (item) {
        if (event === 'attempt') {
          item.state = data.outcome === 'retry' ? 'retrying' : data.outcome;
          item.attempts.push(data);
        } else {
          item.state = 'pending';
        }
      }
      if (detail && detail.source === data.source && detail.messageId === data.messageId) openDelivery(detail.id, false);
    }
    if (!paused) renderLive();
  }

  function liveMatches(item) {
    const type = $('live-type').value;
    if (type && item.type !== type) return false;
    const text = $('live-text').value.trim().toLowerCase();
    if (!text) return true;
    return [item.messageId, item.userId, item.type, item.event, item.body, item.reason].some((v) => typeof v === 'string' && v.toLowerCase().includes(text));
  }

  function renderLive() {
    const list = $('live-list');
    clear(list);
    for (const item of liveItems) {
      if (!liveMatches(item)) continue;
      const li = el('li');
      li.dataset.messageId = item.messageId;
      const head = el('div', undefined, 'head');
      head.appendChild(el('span', time(item.receivedAt), 'muted'));
      head.appendChild(el('span', item.source));
      head.appendChild(el('strong', item.type || '?'));
      // The track event's name, on every row (empty for the other types).
      head.appendChild(el('span', item.event || '', 'event'));
      head.appendChild(el('span', item.userId || ''));
      head.appendChild(el('span', item.state, `badge ${item.state}`));
      if (item.attempts.length > 0) {
        const last = item.attempts[item.attempts.length - 1];
        const what = last.urls.map((u) => (u.status !== null ? `HTTP ${u.status}` : u.error)).join(', ');
        head.appendChild(el('span', `attempt ${last.attempt}: ${what}`, 'muted'));
      }
      li.appendChild(head);
      li.appendChild(el('div', item.body || item.reason || '', 'body'));
      li.addEventListener('click', () => openMessage(item.source, item.messageId));
      list.appendChild(li);
    }
  }

  // ---- one message ---------------------------------------------------------------------------

  async function openMessage(source, messageId) {
    try {
      const page = await api(`/admin/messages?${new URLSearchParams({ source, messageId, limit: '20' })}`);
      const rows = page.items;
      const row = rows.find((r) => r.status !== 'duplicate') || rows[0];
      if (!row) return notice('That message is not in the delivery log (yet).', 'info');
      await openDelivery(row.id, true);
    } catch (error) {
      if (error.message !== 'unauthorized') notice(error.message);
    }
  }

  async function openDelivery(id, switchView) {
    let d;
    try {
      d = await api(`/admin/deliveries/${encodeURIComponent(id)}`);
    } catch (error) {
      if (error.message !== 'unauthorized') notice(error.message);
      return;
    }
    detail = d;
    $('message-empty').hidden = true;
    $('message-detail').hidden = false;
    const fields = $('message-fields');
    clear(fields);
    const rows = [
      ['delivery id', d.id],
      ['status', d.status],
      ['source', d.source],
      ['type', d.type],
      ['event', d.event],
      ['userId', d.userId],
      ['messageId', d.messageId],
      ['received', d.receivedAt],
      ['finished', d.finishedAt],
      ['attempts', d.attempts],
      ['series', d.series],
      ['reason', d.reason],
    ];
    for (const [name, value] of rows) {
      fields.appendChild(el('dt', name));
      const dd = el('dd', value === null || value === undefined ? '-' : value);
      if (name === 'status') dd.id = 'message-status';
      fields.appendChild(dd);
    }
    // In order per user: the older call of the same user this one waits for, a link to it.
    if (d.waitingBehind) {
      fields.appendChild(el('dt', 'waiting behind'));
      const dd = el('dd');
      dd.id = 'message-waiting';
      const behind = d.waitingBehind;
      if (behind.id === null) dd.textContent = behind.messageId;
      else {
        const link = el('a', behind.messageId);
        link.href = '#';
        link.addEventListener('click', (event) => {
          event.preventDefault();
          void openDelivery(behind.id, false);
        });
        dd.appendChild(link);
      }
      fields.appendChild(dd);
    }
    const attempts = $('attempts');
    clear(attempts);
    for (const a of d.attemptLog) {
      const tr = el('tr');
      for (const value of [a.series, a.attempt, a.at, a.url, a.status, a.error, a.durationMs, a.outcome, a.nextAttemptAt]) {
        tr.appendChild(el('td', value === null || value === undefined ? '-' : value));
      }
      // What the receiver answered (its first 2,048 bytes), as text; '-' for none or erased.
      tr.appendChild(el('td', a.responseBody === null || a.responseBody === undefined ? '-' : a.responseBody, 'response'));
      attempts.appendChild(tr);
    }
    let body = d.body;
    if (body) {
      try {
        body = JSON.stringify(JSON.parse(body), null, 2);
      } catch {
        // shown as stored
      }
    }
    $('message-body').textContent = body || (d.hasBody ? '' : 'Not stored (erased when delivered, or never made).');
    const replayable = d.status === 'failed' || (d.status === 'delivered' && d.hasBody);
    $('replay').disabled = !replayable;
    if (switchView) {
      $('replay-result').textContent = '';
      show('message');
    }
  }

  async function replay() {
    if (!detail) return;
    $('replay').disabled = true;
    try {
      const result = await api(`/admin/deliveries/${encodeURIComponent(detail.id)}/replay`, { method: 'POST', body: {} });
      $('replay-result').textContent = `queued again (series ${result.series})`;
      for (let i = 0; i < 20; i++) {
        await openDelivery(detail.id, false);
        if (detail.status !== 'pending' && detail.status !== 'retrying') break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    } catch (error) {
      if (error.message !== 'unauthorized') $('replay-result').textContent = error.message;
    }
  }

  // ---- search and recover --------------------------------------------------------------------

  async function search(more) {
    const params = new URLSearchParams({ limit: '50' });
    const add = (name, id) => {
      const value = $(id).value.trim();
      if (value) params.set(name, value);
    };
    add('source', 'search-source');
    add('status', 'search-status');
    add('type', 'search-type');
    add('event', 'search-event');
    add('messageId', 'search-message-id');
    add('userId', 'search-user-id');
    if (more && searchCursor) params.set('cursor', searchCursor);
    const tbody = $('search-results');
    try {
      const page = await api(`/admin/messages?${params}`);
      if (!more) clear(tbody);
      for (const row of page.items) {
        const tr = el('tr', undefined, 'link');
        for (const value of [row.id, row.receivedAt, row.source, row.type, row.event, row.userId, row.messageId]) tr.appendChild(el('td', value === null ? '-' : value));
        const status = el('td');
        status.appendChild(el('span', row.status, `badge ${row.status}`));
        tr.appendChild(status);
        tr.appendChild(el('td', row.attempts));
        tr.addEventListener('click', () => openDelivery(row.id, true));
        tbody.appendChild(tr);
      }
      searchCursor = page.nextCursor;
      $('search-more').hidden = !searchCursor;
    } catch (error) {
      if (error.message !== 'unauthorized') notice(error.message);
    }
  }

  async function recover() {
    const since = new Date($('recover-since').value);
    if (Number.isNaN(since.getTime())) return;
    try {
      const result = await api('/admin/recover', { body: { source: $('recover-source').value, since: since.toISOString() } });
      $('recover-result').textContent = `${result.queued} failed deliveries queued again`;
    } catch (error) {
      if (error.message !== 'unauthorized') $('recover-result').textContent = error.message;
    }
  }

  // ---- endpoints and chart -------------------------------------------------------------------

  /** Disabled webhook URLs, each with why and a button that enables it again. */
  function showDisabled(list) {
    const tbody = $('disabled');
    clear(tbody);
    for (const d of list) {
      const tr = el('tr');
      for (const value of [d.source, d.url, d.disabledAt, d.reason]) tr.appendChild(el('td', value === null ? '-' : value));
      const td = el('td');
      const button = el('button', 'Enable');
      button.type = 'button';
      button.addEventListener('click', async () => {
        button.disabled = true;
        try {
          await api(`/admin/sources/${encodeURIComponent(d.source)}/destinations/Webhooks/endpoints/enable`, { body: { url: d.url } });
          notice(`Enabled ${d.url}: deliveries go to it again.`, 'info');
          await refreshOverview();
        } catch (error) {
          button.disabled = false;
          if (error.message !== 'unauthorized') notice(error.message);
        }
      });
      td.appendChild(button);
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
    if (list.length === 0) {
      const tr = el('tr');
      const td = el('td', 'None.', 'muted');
      td.colSpan = 5;
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
  }

  async function refreshOverview() {
    let overview;
    try {
      overview = await api('/admin/overview');
    } catch (error) {
      if (error.message !== 'unauthorized') notice(error.message);
      return;
    }
    const tbody = $('endpoints');
    clear(tbody);
    for (const e of overview.stats.endpoints) {
      const tr = el('tr');
      const rate = e.successRate === null ? '-' : `${Math.round(e.successRate * 1000) / 10} %`;
      for (const value of [e.source, e.url, e.lastStatus, e.lastError, e.consecutiveFailures, e.attempts, rate, e.p50Ms, e.p99Ms]) {
        tr.appendChild(el('td', value === null ? '-' : value));
      }
      tbody.appendChild(tr);
    }
    if (overview.stats.endpoints.length === 0) {
      const tr = el('tr');
      const td = el('td', 'No webhook request in the last hour.', 'muted');
      td.colSpan = 9;
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
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
    for (const name of ['accepted', 'duplicates', 'refused', 'delivered', 'retrying', 'failed', 'queueDepth', 'oldestPendingAge', 'inFlight']) {
      stats.appendChild(el('dt', name));
      stats.appendChild(el('dd', overview.stats[name] === null ? '-' : overview.stats[name]));
    }
  }

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  /** A line per series over the points, drawn by hand: no chart library. */
  function drawChart(container, points, series) {
    const width = 900;
    const height = 200;
    const left = 40;
    const bottom = 20;
    let max = 1;
    for (const p of points) for (const [name] of series) if (p[name] !== null && p[name] > max) max = p[name];
    const x = (i) => left + (i * (width - left - 10)) / Math.max(1, points.length - 1);
    const y = (v) => height - bottom - (v * (height - bottom - 10)) / max;
    const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': series.map(([n]) => n).join(', ') });
    chart.appendChild(svg('line', { x1: left, y1: height - bottom, x2: width - 10, y2: height - bottom, stroke: '#d8dde2' }));
    chart.appendChild(svg('line', { x1: left, y1: 10, x2: left, y2: height - bottom, stroke: '#d8dde2' }));
    chart.appendChild(svg('text', { x: left - 4, y: 14, 'text-anchor': 'end', 'font-size': 11, fill: '#66707a' }, max));
    chart.appendChild(svg('text', { x: left - 4, y: height - bottom, 'text-anchor': 'end', 'font-size': 11, fill: '#66707a' }, 0));
    if (points.length > 0) {
      chart.appendChild(svg('text', { x: left, y: height - 4, 'font-size': 11, fill: '#66707a' }, time(new Date(points[0].at).toISOString())));
      chart.appendChild(svg('text', { x: width - 10, y: height - 4, 'text-anchor': 'end', 'font-size': 11, fill: '#66707a' }, 'now'));
    }
    for (const [name, color] of series) {
      const coords = [];
      points.forEach((p, i) => {
        if (p[name] !== null) coords.push(`${x(i).toFixed(1)},${y(p[name]).toFixed(1)}`);
      });
      if (coords.length > 0) chart.appendChild(svg('polyline', { points: coords.join(' '), fill: 'none', stroke: color, 'stroke-width': 2, 'data-series': name }));
      // A dot per minute with a value, so that a lone sample shows too.
      for (const xy of coords) {
        const [cx, cy] = xy.split(',');
        chart.appendChild(svg('circle', { cx, cy, r: 2.5, fill: color }));
      }
    }
    clear(container);
    container.appendChild(chart);
  }

  // ---- sources: runtime setup ----------------------------------------------------------------

  /** The source open in the editor, as the API last showed it. */
  let selected = null;

  function showKey(source, writeKey) {
    $('key-source').textContent = source;
    $('key-value').value = writeKey;
    $('key-copied').textContent = '';
    $('key-box').hidden = false;
  }

  async function copyKey() {
    const value = $('key-value').value;
    try {
      await navigator.clipboard.writeText(value);
      $('key-copied').textContent = 'copied';
    } catch {
      $('key-value').select();
      $('key-copied').textContent = 'select and copy it by hand';
    }
  }

  function path(name, rest) {
    return `/admin/sources/${encodeURIComponent(name)}${rest || ''}`;
  }

  /** `keep`: the editor stays on its source; `refill`: its Webhooks form shows the settings again. */
  async function loadSources(keep, refill) {
    let answer;
    try {
      answer = await api('/admin/sources');
    } catch (error) {
      if (error.message !== 'unauthorized') notice(error.message);
      return;
    }
    const tbody = $('sources-list');
    clear(tbody);
    for (const source of answer.sources) {
      const tr = el('tr', undefined, 'link');
      tr.dataset.source = source.name;
      const webhooks = source.destinations.Webhooks;
      tr.appendChild(el('td', source.name));
      tr.appendChild(el('td', webhooks === null ? 'none' : webhooks.enabled ? 'on' : 'off'));
      tr.appendChild(el('td', webhooks === null ? '-' : webhooks.webhooks.length));
      tr.appendChild(el('td', source.writeKeys.map((k) => `…${k.last4}`).join(' ')));
      tr.addEventListener('click', () => openSource(source));
      tbody.appendChild(tr);
    }
    fillSources(answer.sources.map((s) => s.name));
    if (keep && selected) {
      const fresh = answer.sources.find((s) => s.name === selected.name);
      if (fresh) {
        openSource(fresh, true);
        if (refill) fillWebhooksForm(fresh.destinations.Webhooks);
      } else {
        closeEditor();
      }
    }
  }

  function closeEditor() {
    selected = null;
    $('source-editor').hidden = true;
  }

  function openSource(source, keepForm) {
    selected = source;
    $('editor-name').textContent = source.name;
    const current = $('editor-current');
    clear(current);
    const webhooks = source.destinations.Webhooks;
    const rows = [['Webhooks', webhooks === null ? 'none' : webhooks.enabled ? 'on' : 'off']];
    if (webhooks !== null) {
      webhooks.webhooks.forEach((w, i) => {
        const headers = w.headerNames.length ? ` (headers: ${w.headerNames.join(', ')})` : '';
        const limit = w.rateLimit ? `, at most ${w.rateLimit.perSecond} a second` : '';
        rows.push([`URL ${i + 1}`, `${w.url}${headers}${limit}${filterText(w.filter)}`]);
      });
      rows.push(['signing', `${webhooks.signing}${webhooks.hasSharedSecret ? ', with a shared secret' : ', unsigned'}`]);
      rows.push(['order', webhooks.ordering === 'user' ? 'per user' : 'none']);
    }
    rows.push(['allowed origins', source.allowedOrigins === null ? 'none (no browser requests)' : source.allowedOrigins.join(', ') || 'none']);
    rows.push(['ingestion limit', source.ingestRateLimit === null ? 'none' : `${source.ingestRateLimit.perSecond} a second, burst ${source.ingestRateLimit.burst}`]);
    for (const [name, value] of rows) {
      current.appendChild(el('dt', name));
      current.appendChild(el('dd', value));
    }
    $('wh-toggle').disabled = webhooks === null;
    $('wh-test').disabled = webhooks === null;
    $('wh-toggle').textContent = webhooks !== null && webhooks.enabled ? 'Switch off' : 'Switch on';
    const keys = $('source-keys');
    clear(keys);
    for (const k of source.writeKeys) {
      const tr = el('tr');
      for (const value of [k.id, k.last4, k.origin, k.createdAt, k.expiresAt || '-']) tr.appendChild(el('td', value));
      keys.appendChild(tr);
    }
    if (!keepForm) {
      fillWebhooksForm(webhooks);
      $('wh-result').textContent = '';
      $('settings-origins').value = (source.allowedOrigins || []).join('\n');
      $('settings-rate').value = source.ingestRateLimit ? String(source.ingestRateLimit.perSecond) : '';
      $('settings-burst').value = source.ingestRateLimit ? String(source.ingestRateLimit.burst) : '';
      $('settings-result').textContent = '';
      $('wh-test-summary').textContent = '';
      clear($('wh-test-results'));
    }
    $('source-editor').hidden = false;
  }

  /** What a header line shows in place of a value that is set: values are never shown again. */
  const HIDDEN_VALUE = '(set, not shown)';

  /** The Webhooks form as the source has it now; what it holds then is what a save compares with. */
  let formBase = null;

  function fillWebhooksForm(webhooks) {
    const urls = webhooks === null ? [] : webhooks.webhooks;
    for (let i = 0; i < 5; i++) {
      const w = urls[i];
      // The URL as the API shows it (no credentials, no query): left as it is, the stored one stays.
      $(`wh-url-${i}`).value = w ? w.url : '';
      const headers = w ? w.headerNames.map((name) => `${name}: ${HIDDEN_VALUE}`) : [];
      $(`wh-headers-${i}`).value = headers.join('\n');
      $(`wh-headers-${i}`).rows = Math.max(1, headers.length);
      $(`wh-rate-${i}`).value = w && w.rateLimit ? String(w.rateLimit.perSecond) : '';
      $(`wh-types-${i}`).value = w && w.filter && w.filter.types ? w.filter.types.join(', ') : '';
      $(`wh-events-${i}`).value = w && w.filter && w.filter.events ? w.filter.events.join('\n') : '';
    }
    const secretSet = webhooks !== null && webhooks.hasSharedSecret;
    $('wh-secret').value = '';
    $('wh-secret').placeholder = secretSet ? 'empty: keep the secret set' : 'empty: unsigned';
    $('wh-secret-state').textContent = webhooks === null ? '' : secretSet ? 'secret set (not shown)' : 'no secret: unsigned';
    $('wh-secret-remove').checked = false;
    $('wh-secret-remove-label').hidden = !secretSet;
    $('wh-enabled').checked = webhooks === null ? true : webhooks.enabled;
    $('wh-signing').value = webhooks === null ? 'x-signature' : webhooks.signing;
    $('wh-ordering').value = webhooks === null ? 'none' : webhooks.ordering || 'none';
    $('wh-heading-note').textContent =
      webhooks === null
        ? '(none yet: a save sets them; the secret and header values are never shown again)'
        : '(a save changes only what you edit here; the secret and header values are never shown again)';
    formBase = { webhooks, form: readWebhooksForm() };
  }

  function readWebhooksForm() {
    const rows = [];
    for (let i = 0; i < 5; i++) {
      rows.push({
        url: $(`wh-url-${i}`).value.trim(),
        headers: $(`wh-headers-${i}`).value,
        rate: $(`wh-rate-${i}`).value.trim(),
        types: $(`wh-types-${i}`).value.split(/[\s,]+/).filter(Boolean),
        events: $(`wh-events-${i}`).value.split('\n').filter((line) => line !== ''),
      });
    }
    return {
      rows,
      secret: $('wh-secret').value,
      removeSecret: $('wh-secret-remove').checked,
      enabled: $('wh-enabled').checked,
      signing: $('wh-signing').value,
      ordering: $('wh-ordering').value,
    };
  }

  /** A URL's filter in words, for the editor's list. */
  function filterText(filter) {
    if (!filter) return '';
    const parts = [];
    if (filter.types) parts.push(`types ${filter.types.join(', ')}`);
    if (filter.events) parts.push(`${filter.events.length} track event${filter.events.length === 1 ? '' : 's'}`);
    return `; only ${parts.join(', ')}`;
  }

  async function createSource() {
    const name = $('source-name').value;
    try {
      const created = await api('/admin/sources', { body: { name } });
      $('source-name').value = '';
      $('source-result').textContent = `created ${created.name}`;
      showKey(created.name, created.writeKey);
      await loadSources();
      const row = [...document.querySelectorAll('#sources-list tr')].find((tr) => tr.dataset.source === created.name);
      if (row) row.click();
    } catch (error) {
      if (error.message !== 'unauthorized') $('source-result').textContent = error.message;
    }
  }

  /** "Name: value" lines into a headers object; a line without a colon is an error. */
  function parseHeaders(text, index) {
    const headers = {};
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error(`URL ${index + 1}: write each header as "Name: value"`);
      headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
    }
    return headers;
  }

  /** A URL's rate limit and filter as the API takes them; undefined for none. */
  function rateOf(row) {
    // Sent as typed: the API checks it and names the field when it is wrong.
    return row.rate ? { perSecond: Number(row.rate) } : undefined;
  }

  function filterOf(row) {
    if (!row.types.length && !row.events.length) return undefined;
    const filter = {};
    if (row.types.length) filter.types = row.types;
    if (row.events.length) filter.events = row.events;
    return filter;
  }

  /** The whole destination from the form, for a source without one yet (PUT). */
  function wholeWebhooks(form) {
    const webhooks = [];
    form.rows.forEach((row, i) => {
      const headers = parseHeaders(row.headers, i);
      if (!row.url) return;
      const entry = { url: row.url };
      if (Object.keys(headers).length) entry.headers = headers;
      if (rateOf(row)) entry.rateLimit = rateOf(row);
      if (filterOf(row)) entry.filter = filterOf(row);
      webhooks.push(entry);
    });
    const body = { enabled: form.enabled, signing: form.signing, ordering: form.ordering, webhooks };
    if (form.secret) body.sharedSecret = form.secret;
    return body;
  }

  /** The changes between the form as filled and as it is now (PATCH): untouched fields are left out. */
  function changedWebhooks(base, form) {
    const body = {};
    const before = base.form;
    const shown = base.webhooks.webhooks;
    let urlsChanged = false;
    const webhooks = [];
    form.rows.forEach((row, i) => {
      const was = before.rows[i];
      const headers = parseHeaders(row.headers, i);
      if (i >= shown.length) {
        if (!row.url) return;
        urlsChanged = true;
        for (const [name, value] of Object.entries(headers)) {
          if (value === HIDDEN_VALUE) throw new Error(`URL ${i + 1}: write the value of the header ${name}`);
        }
        const entry = { url: row.url };
        if (Object.keys(headers).length) entry.headers = headers;
        if (rateOf(row)) entry.rateLimit = rateOf(row);
        if (filterOf(row)) entry.filter = filterOf(row);
        webhooks.push(entry);
        return;
      }
      // A URL set now and emptied here: removed.
      if (!row.url) {
        urlsChanged = true;
        return;
      }
      const entry = { from: i };
      if (row.url !== was.url) entry.url = row.url;
      const change = {};
      const kept = new Set();
      const names = shown[i].headerNames;
      for (const [name, value] of Object.entries(headers)) {
        const existing = names.find((n) => n.toLowerCase() === name.toLowerCase());
        if (value === HIDDEN_VALUE) {
          if (existing === undefined) throw new Error(`URL ${i + 1}: write the value of the header ${name}`);
          kept.add(existing);
        } else {
          change[name] = value;
          if (existing !== undefined) kept.add(existing);
        }
      }
      for (const name of names) if (!kept.has(name)) change[name] = null;
      if (Object.keys(change).length) entry.headers = change;
      if (row.rate !== was.rate) entry.rateLimit = rateOf(row) || null;
      if (row.types.join() !== was.types.join() || row.events.join('\n') !== was.events.join('\n')) entry.filter = filterOf(row) || null;
      if (Object.keys(entry).length > 1) urlsChanged = true;
      webhooks.push(entry);
    });
    // Dropped or reordered URLs count too: the list goes whole whenever any of it changed.
    if (urlsChanged || webhooks.length !== shown.length) body.webhooks = webhooks;
    if (form.secret) body.sharedSecret = form.secret;
    else if (form.removeSecret) body.sharedSecret = null;
    if (form.enabled !== before.enabled) body.enabled = form.enabled;
    if (form.signing !== before.signing) body.signing = form.signing;
    if (form.ordering !== before.ordering) body.ordering = form.ordering;
    return body;
  }

  async function saveWebhooks() {
    if (!selected || !formBase) return;
    try {
      const form = readWebhooksForm();
      const name = selected.name;
      if (formBase.webhooks === null) {
        await api(path(name, '/destinations/Webhooks'), { method: 'PUT', body: wholeWebhooks(form) });
      } else {
        const body = changedWebhooks(formBase, form);
        if (Object.keys(body).length === 0) {
          $('wh-result').textContent = 'nothing changed';
          return;
        }
        await api(path(name, '/destinations/Webhooks'), { method: 'PATCH', body });
      }
      await loadSources(true, true);
      $('wh-result').textContent = 'saved';
    } catch (error) {
      if (error.message !== 'unauthorized') $('wh-result').textContent = error.message;
    }
  }

  async function saveSettings() {
    if (!selected) return;
    try {
      const body = {};
      const origins = $('settings-origins').value.split('\n').map((line) => line.trim()).filter((line) => line !== '');
      if (origins.length) body.allowedOrigins = origins;
      const rate = $('settings-rate').value.trim();
      const burst = $('settings-burst').value.trim();
      // Sent as typed: the API checks them and names the field when one is wrong.
      if (rate) body.ingestRateLimit = burst ? { perSecond: Number(rate), burst: Number(burst) } : { perSecond: Number(rate) };
      await api(path(selected.name, '/settings'), { method: 'PUT', body });
      $('settings-result').textContent = 'saved';
      await loadSources(true);
    } catch (error) {
      if (error.message !== 'unauthorized') $('settings-result').textContent = error.message;
    }
  }

  async function toggleWebhooks() {
    const webhooks = selected && selected.destinations.Webhooks;
    if (!webhooks) return;
    try {
      await api(path(selected.name, '/destinations/Webhooks'), { method: 'PATCH', body: { enabled: !webhooks.enabled } });
      await loadSources(true);
    } catch (error) {
      if (error.message !== 'unauthorized') notice(error.message);
    }
  }

  async function testWebhooks() {
    if (!selected) return;
    $('wh-test-summary').textContent = 'sending';
    const tbody = $('wh-test-results');
    clear(tbody);
    try {
      const result = await api(path(selected.name, '/destinations/Webhooks/test'), { body: { type: $('wh-test-type').value } });
      $('wh-test-summary').textContent = result.delivered ? `delivered (${result.messageId})` : `not delivered (${result.messageId})`;
      for (const r of result.results) {
        const tr = el('tr');
        for (const value of [r.url, r.status === null ? '-' : r.status, r.durationMs === null ? '-' : r.durationMs, r.error || '-']) tr.appendChild(el('td', value));
        tbody.appendChild(tr);
      }
    } catch (error) {
      if (error.message !== 'unauthorized') $('wh-test-summary').textContent = error.message;
    }
  }

  async function rotateKey() {
    if (!selected) return;
    const grace = Number($('key-grace').value);
    try {
      const issued = await api(path(selected.name, '/write-keys'), { body: { graceSeconds: grace } });
      showKey(issued.source, issued.writeKey);
      await loadSources(true);
    } catch (error) {
      if (error.message !== 'unauthorized') notice(error.message);
    }
  }

  async function deleteSource() {
    if (!selected) return;
    const name = selected.name;
    if (!window.confirm(`Delete the source ${JSON.stringify(name)}? Its keys stop at once and its queued deliveries are failed.`)) return;
    try {
      const result = await api(path(name), { method: 'DELETE' });
      notice(`Deleted ${result.name}: ${result.failedDeliveries} queued deliveries failed.`, 'info');
      closeEditor();
      await loadSources();
    } catch (error) {
      if (error.message !== 'unauthorized') notice(error.message);
    }
  }

  // ---- schema and usage ----------------------------------------------------------------------

  /** The schema shown now, as the API answered it. */
  let schema = null;

  function usageRow(first, counts) {
    const tr = el('tr');
    for (const value of [first, counts.received, counts.filtered, counts.rejected, counts.delivered, counts.failed]) tr.appendChild(el('td', value));
    return tr;
  }

  /** Why the controls block an event or a type, in words; '' when they do not. */
  function blockedBy(controls, type, event) {
    if (controls.blockedTypes.includes(type)) return 'blocked type';
    if (type !== 'track') return '';
    if (controls.blockedEvents.includes(event)) return 'blocked';
    if (controls.allowedEvents !== null && !controls.allowedEvents.includes(event)) return 'not in the tracking plan';
    return '';
  }

  async function loadSchema() {
    const name = $('schema-source').value;
    $('schema-result').textContent = '';
    await loadUsage(name);
    if (!name) {
      schema = null;
      clear($('schema-events'));
      clear($('schema-controls'));
      return;
    }
    let answer;
    try {
      answer = await api(path(name, '/schema'));
    } catch (error) {
      if (error.message !== 'unauthorized') $('schema-result').textContent = error.message;
      return;
    }
    schema = answer;
    const controls = $('schema-controls');
    clear(controls);
    const rows = [
      ['blocked events', answer.blockedEvents.length ? answer.blockedEvents.join(', ') : 'none'],
      ['tracking plan', answer.allowedEvents === null ? 'none: every track event may be forwarded' : `${answer.allowedEvents.length} events; others are blocked`],
    ];
    for (const [name, value] of rows) {
      controls.appendChild(el('dt', name));
      controls.appendChild(el('dd', value));
    }
    controls.appendChild(el('dt', 'blocked types'));
    const types = el('dd', answer.blockedTypes.length ? undefined : 'none');
    for (const type of answer.blockedTypes) {
      types.appendChild(el('span', `${type} `));
      types.appendChild(toggleButton('Allow', { type }));
      types.appendChild(document.createTextNode(' '));
    }
    controls.appendChild(types);
    const tbody = $('schema-events');
    clear(tbody);
    for (const e of answer.events) {
      const tr = el('tr');
      tr.dataset.type = e.type;
      if (e.event !== undefined) tr.dataset.event = e.event;
      const why = blockedBy(answer, e.type, e.event);
      for (const value of [e.type, e.event === undefined ? '-' : e.event, e.count, e.firstSeen, e.lastSeen]) tr.appendChild(el('td', value));
      const state = el('td');
      state.appendChild(el('span', why ? why : 'yes', `badge ${why ? 'failed' : 'delivered'}`));
      tr.appendChild(state);
      const td = el('td');
      const button = toggleButton(why ? 'Allow' : 'Block', e.event === undefined ? { type: e.type } : { event: e.event });
      // A track event blocked with its whole type is allowed with the type, above.
      if (why === 'blocked type' && e.event !== undefined) button.disabled = true;
      td.appendChild(button);
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
    if (answer.events.length === 0) {
      const tr = el('tr');
      const td = el('td', 'Nothing received from this source yet.', 'muted');
      td.colSpan = 7;
      tr.appendChild(td);
      tbody.appendChild(tr);
    }
    const other = answer.otherEvents;
    $('schema-other').hidden = other === null;
    $('schema-other').textContent = other === null ? '' : `${other.count} track calls whose names are not listed (past the names kept, or too long), last at ${other.lastSeen}.`;
  }

  /** A button that blocks or allows an event name (`{ event }`) or a call type (`{ type }`). */
  function toggleButton(label, what) {
    const button = el('button', label, 'schema-toggle');
    button.type = 'button';
    button.addEventListener('click', () => toggle(label === 'Block', what, button));
    return button;
  }

  async function toggle(block, what, button) {
    if (!schema) return;
    const name = schema.source;
    const next = {
      blockedEvents: [...schema.blockedEvents],
      allowedEvents: schema.allowedEvents === null ? null : [...schema.allowedEvents],
      blockedTypes: [...schema.blockedTypes],
    };
    const without = (list, item) => list.filter((x) => x !== item);
    if (what.type !== undefined) {
      next.blockedTypes = block ? [...without(next.blockedTypes, what.type), what.type] : without(next.blockedTypes, what.type);
    } else if (block) {
      next.blockedEvents = [...without(next.blockedEvents, what.event), what.event];
    } else {
      next.blockedEvents = without(next.blockedEvents, what.event);
      // Allowed under a tracking plan: the plan takes it in.
      if (next.allowedEvents !== null && !next.allowedEvents.includes(what.event)) next.allowedEvents.push(what.event);
    }
    button.disabled = true;
    try {
      await api(path(name, '/schema'), { method: 'PUT', body: next });
      if ($('schema-source').value === name) await loadSchema();
      $('schema-result').textContent = `${block ? 'blocked' : 'allowed'} ${what.event !== undefined ? what.event : `${what.type} calls`}`;
    } catch (error) {
      button.disabled = false;
      if (error.message !== 'unauthorized') $('schema-result').textContent = error.message;
    }
  }

  async function loadUsage(name) {
    let all;
    try {
      all = await api('/admin/usage');
    } catch (error) {
      if (error.message !== 'unauthorized') $('schema-result').textContent = error.message;
      return;
    }
    const sources = $('usage-sources');
    clear(sources);
    for (const s of all.sources) sources.appendChild(usageRow(s.source, s));
    $('usage-name').textContent = name || '-';
    const days = $('usage-days');
    clear(days);
    const mine = all.sources.find((s) => s.source === name);
    if (!mine) return;
    for (const d of mine.days) days.appendChild(usageRow(d.day, d));
  }

  // ---- wiring --------------------------------------------------------------------------------

  document.addEventListener('DOMContentLoaded', () => {
    $('signin-form').addEventListener('submit', (event) => {
      event.preventDefault();
      token = $('token').value.trim();
      $('token').value = '';
      if (!token) return;
      sessionStorage.setItem(TOKEN_KEY, token);
      signIn();
    });
    $('sign-out').addEventListener('click', () => signOut('Signed out.'));
    for (const tab of document.querySelectorAll('.tab')) tab.addEventListener('click', () => show(tab.dataset.view));
    $('live-source').addEventListener('change', () => {
      liveItems = [];
      liveByKey.clear();
      renderLive();
      startStream();
    });
    $('live-type').addEventListener('change', renderLive);
    $('live-text').addEventListener('input', renderLive);
    $('live-pause').addEventListener('click', () => {
      paused = !paused;
      $('live-pause').textContent = paused ? 'Resume' : 'Pause';
      if (!paused) renderLive();
    });
    $('replay').addEventListener('click', replay);
    $('search-form').addEventListener('submit', (event) => {
      event.preventDefault();
      search(false);
    });
    $('search-more').addEventListener('click', () => search(true));
    $('recover-form').addEventListener('submit', (event) => {
      event.preventDefault();
      recover();
    });
    $('source-create-form').addEventListener('submit', (event) => {
      event.preventDefault();
      createSource();
    });
    $('key-copy').addEventListener('click', copyKey);
    $('wh-form').addEventListener('submit', (event) => {
      event.preventDefault();
      saveWebhooks();
    });
    $('wh-toggle').addEventListener('click', toggleWebhooks);
    $('wh-test').addEventListener('click', testWebhooks);
    $('key-rotate').addEventListener('click', rotateKey);
    $('settings-form').addEventListener('submit', (event) => {
      event.preventDefault();
      saveSettings();
    });
    $('source-delete').addEventListener('click', deleteSource);
    $('schema-source').addEventListener('change', loadSchema);
    $('schema-refresh').addEventListener('click', loadSchema);
    if (token) signIn();
  });
})();
