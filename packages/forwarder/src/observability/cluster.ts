import createDebug from 'debug';
import { mergeHealth, windowStart } from './health';
import type { EndpointHealth, EndpointMinute, HealthTracker, HealthView } from './health';
import { mergeTimeline } from './timeline';
import type { Timeline, TimelineMinute, TimelinePoint } from './timeline';
import { decodeHealthMinute, decodeLatest, decodeTimelineMinute, encodeHealthMinute, encodeLatest, encodeTimelineMinute, VIEW_FORMAT } from './shared-views';
import { LiveRelay } from './relay';
import type { LiveEvent, LiveRelayHook, LiveStream } from './stream';
import type { ClusterStore, StoredMinute, StoredView, ViewWrite } from '../store/contract';

const log = createDebug('eventrelay:forwarder');

const MINUTE = 60_000;
/** How often an instance writes its view (when it changed) and reads who watches the live stream, in ms. */
const TICK = 1000;
/** A view not written for this long is left out of the overview, and removed, in ms. */
export const VIEW_MAX_AGE = 3_600_000;
/** An instance with nothing new writes its view this often anyway: it still counts as running, in ms. */
const KEEPALIVE = 60_000;
/**
 * How long an instance's subscribers hold the others' relay on without being renewed, in ms
 * (renewed every tick, each second). 10 s, not 3: on a loaded machine a renewal can queue behind
 * the delivery loop's writes, and the others then stopped relaying for a moment (a test saw an
 * `accepted` event missing on another instance's stream). An instance that leaves announces it at
 * once; one that dies is relayed to for up to this long, for nothing.
 */
const WATCH_TTL = 10_000;
/** How often old views are removed, in ms. */
const PRUNE_EVERY = 60_000;

/** The overview's parts that cover every instance. */
export interface ClusterOverview {
  /** Instances in the picture: this one, and each other that wrote its view within the hour. */
  readonly instances: number;
  readonly endpoints: EndpointHealth[];
  readonly chart: TimelinePoint[];
}

/** What an instance last wrote of its view. */
interface Written {
  readonly health: number;
  readonly timeline: number;
  readonly at: number;
  readonly minute: number | undefined;
  readonly watchingUntil: number;
}

/**
 * One picture of the instances sharing a store (PostgreSQL). Every second, an instance writes its
 * endpoint health and timeline when they changed (its latest state per URL, and the minutes that
 * moved) and learns which other instances have live-stream subscribers; the overview merges its
 * own fresh state with the others' views of the last hour. Its live stream relays its events while
 * another instance has a subscriber, and receives theirs while it has one: it then LISTENs on the
 * relay channel, and announces itself at once (a notification) and in its row every second.
 */
export class ClusterView implements LiveRelayHook {
  readonly relay: LiveRelay;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private written: Written = { health: -1, timeline: -1, at: Number.NEGATIVE_INFINITY, minute: undefined, watchingUntil: 0 };
  private lastPrune = Number.NEGATIVE_INFINITY;
  /** This instance has live-stream subscribers. */
  private watchingOn = false;
  /** It hears the relay channel (its LISTEN is in place). */
  private hearing = false;
  private relayListening: { readonly ready: Promise<void>; stop(): void } | undefined;
  private announcements: { stop(): void } | undefined;
  private announcing: Promise<void> = Promise.resolve();
  private started = false;
  private closed = false;

  constructor(
    private readonly store: ClusterStore,
    /** This instance's id, unique among those sharing the store. */
    private readonly owner: string,
    private readonly health: HealthTracker,
    private readonly timeline: Timeline,
    private readonly live: LiveStream,
    private readonly now: () => number,
  ) {
    this.relay = new LiveRelay(owner, store, now);
  }

  /** Starts the exchange: the view written now and every second, announcements heard. */
  start(): void {
    if (this.closed || this.started) return;
    this.started = true;
    this.announcements = this.store.onAnnounce((owner, until) => this.relay.watcher(owner, until));
    this.timer = setInterval(() => this.tickSoon(), TICK);
    this.timer.unref();
    this.tickSoon();
  }

  get wanted(): boolean {
    return this.relay.wanted;
  }

  send(event: LiveEvent, source: string, data: object, json: string): void {
    this.relay.send(event, source, data, json);
  }

  watching(on: boolean): void {
    if (this.closed || on === this.watchingOn) return;
    this.watchingOn = on;
    if (!on) {
      this.relayListening?.stop();
      this.relayListening = undefined;
      this.hearing = false;
      this.announce(0);
      return;
    }
    const listening = this.store.onRelay((payload) => {
      const relayed = this.relay.receive(payload);
      if (relayed !== undefined) this.live.deliver(relayed.event, relayed.source, relayed.json);
    });
    this.relayListening = listening;
    // Announced once this instance hears the relay channel: what the others send from then on reaches it.
    void listening.ready.then(() => {
      if (this.relayListening !== listening || this.closed) return;
      this.hearing = true;
      this.announce(this.now() + WATCH_TTL);
    });
  }

  /** Every instance's endpoint health and chart: this one's as it is now, the others' as they last wrote them. */
  async overview(): Promise<ClusterOverview> {
    const now = this.now();
    const from = windowStart(now);
    const stored = await this.store.read(this.owner, now - VIEW_MAX_AGE, from, VIEW_FORMAT);
    const health: HealthView[] = [{ latest: this.health.latest(), minutes: this.health.minutes(from) }];
    const timelines: TimelineMinute[][] = [this.timeline.minutes(from)];
    for (const view of stored) {
      const decoded = decodeView(view);
      if (decoded === undefined) {
        log('the view of instance %s is not in a form this release reads: left out of the overview', view.owner);
        continue;
      }
      health.push(decoded.health);
      timelines.push(decoded.timeline);
    }
    return { instances: timelines.length, endpoints: mergeHealth(health, now), chart: mergeTimeline(timelines, now) };
  }

  /** Writes the view one last time (the last second's work stays in the picture), then stops. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.ticking;
    this.announcements?.stop();
    this.relayListening?.stop();
    if (this.watchingOn) this.announce(0);
    this.watchingOn = false;
    this.hearing = false;
    // An instance that never started (it only opened the store) has no view to leave behind.
    if (this.started) await this.exchange(true);
    await this.announcing;
    await this.relay.close();
  }

  private tickSoon(): void {
    // One at a time: a slow database skips ticks rather than piling them up.
    this.ticking ??= this.tick().finally(() => (this.ticking = undefined));
  }

  private async tick(): Promise<void> {
    if (this.closed) return;
    await this.exchange(false);
    const now = this.now();
    if (now - this.lastPrune < PRUNE_EVERY) return;
    this.lastPrune = now;
    try {
      const removed = await this.store.prune(now - VIEW_MAX_AGE, windowStart(now));
      if (removed > 0) log('removed %d instance views not written for an hour', removed);
    } catch (error) {
      log('instance views: prune failed: %s', (error as Error).message);
    }
  }

  /** Writes the view if it moved (or `final`), and notes who watches. */
  private async exchange(final: boolean): Promise<void> {
    const now = this.now();
    const next = this.nextWrite(now, final);
    try {
      const watchers = await this.store.exchange(this.owner, now, next?.write);
      if (next !== undefined) this.written = next.written;
      if (!final) for (const [owner, until] of watchers) this.relay.watcher(owner, until);
    } catch (error) {
      log('instance view: could not write it or read who watches: %s', (error as Error).message);
    }
  }

  /** What to write now: undefined when nothing moved, nobody watches here, and the row is fresh. */
  private nextWrite(now: number, final: boolean): { write: ViewWrite; written: Written } | undefined {
    const healthVersion = this.health.version;
    const timelineVersion = this.timeline.version;
    const watchingUntil = this.hearing ? now + WATCH_TTL : 0;
    const moved = healthVersion !== this.written.health || timelineVersion !== this.written.timeline;
    const due = final || now - this.written.at >= KEEPALIVE || watchingUntil !== 0 || this.written.watchingUntil !== 0;
    if (!moved && !due) return undefined;
    const current = Math.floor(now / MINUTE);
    const minutes: StoredMinute[] = [];
    if (moved) {
      // The minutes written last time may have moved since (events late in a minute), and those after.
      for (let m = Math.max(windowStart(now), this.written.minute ?? windowStart(now)); m <= current; m++) {
        const health = this.health.minutes(m, m);
        const timeline = this.timeline.minutes(m, m)[0];
        if (health.length === 0 && timeline === undefined) continue;
        minutes.push({ minute: m, health: encodeHealthMinute(health), timeline: encodeTimelineMinute(timeline) });
      }
    }
    return {
      write: { format: VIEW_FORMAT, endpoints: encodeLatest(this.health.latest()), minutes, watchingUntil },
      written: { health: healthVersion, timeline: timelineVersion, at: now, minute: current, watchingUntil },
    };
  }

  private announce(until: number): void {
    // In order: a stop never overtakes the start before it.
    this.announcing = this.announcing
      .then(() => this.store.announce(this.owner, this.now(), until))
      .catch((error: Error) => log('live stream: could not announce its subscribers to the other instances: %s', error.message));
  }
}

/** Another instance's view, read; undefined when any part is not in the form this release writes. */
function decodeView(view: StoredView): { health: HealthView; timeline: TimelineMinute[] } | undefined {
  const latest = decodeLatest(view.endpoints);
  if (latest === undefined) return undefined;
  const minutes: EndpointMinute[] = [];
  const timeline: TimelineMinute[] = [];
  for (const m of view.minutes) {
    const h = decodeHealthMinute(m.health, m.minute);
    const t = decodeTimelineMinute(m.timeline, m.minute);
    if (h === undefined || t === undefined) return undefined;
    minutes.push(...h);
    if (t !== null) timeline.push(t);
  }
  return { health: { latest, minutes }, timeline };
}
