/**
 * The transforms of one destination's URLs: each compiled once, at its first call (a change of the
 * settings makes a new destination; one made only to check settings compiles nothing), and run on
 * a call's webhook message for the URLs that call goes to. What each made is the body that URL
 * gets, or a skip, or a failure.
 */
import { compileTransform } from './sandbox';
import type { Transform, TransformResult } from './sandbox';
import type { WebhookTransform } from '../store/contract';

/** What a call's transforms made, by the URLs' positions. */
export interface Transformed {
  /** The bytes a URL's transform returned (its JSON text); undefined for a URL that gets the message as it is. */
  readonly bodies: readonly (Buffer | undefined)[];
  /** URLs whose transform returned null or undefined: not sent to for this call. */
  readonly dropped: readonly number[];
  /** URLs whose transform failed: final for this call; `reason` reads after `transform_failed: `. */
  readonly failed: readonly TransformFailure[];
}

export interface TransformFailure {
  readonly index: number;
  readonly reason: string;
  readonly durationMs: number;
}

/** One URL's transform: its settings, then compiling, compiled, or failed to compile (its reason, for every call). */
interface Slot {
  readonly transform: WebhookTransform;
  compiled: Transform | undefined;
  failure: string | undefined;
  ready: Promise<void> | undefined;
}

export class UrlTransforms {
  readonly #slots: (Slot | undefined)[];
  #disposed = false;
  /** The calls asked for in this turn of the event loop, run at its end (see `grouped`). */
  #group: { text: string; indexes: readonly number[]; resolve: (done: Transformed) => void; reject: (error: unknown) => void }[] = [];

  constructor(webhooks: readonly { readonly index: number; readonly transform: WebhookTransform | undefined }[]) {
    this.#slots = webhooks.map((w): Slot | undefined =>
      w.transform === undefined ? undefined : { transform: w.transform, compiled: undefined, failure: undefined, ready: undefined },
    );
  }

  #compile(slot: Slot): Promise<void> {
    const { transform } = slot;
    return compileTransform(transform.code, transform.timeoutMs === undefined ? {} : { timeoutMs: transform.timeoutMs }).then(
      (compiled) => {
        if (this.#disposed) compiled.dispose();
        else slot.compiled = compiled;
      },
      (error: unknown) => {
        // Checked when set, so rare: code stored before a rule changed, or the engine not loading.
        slot.failure = error instanceof Error ? error.message : String(error);
      },
    );
  }

  /**
   * Runs at once the transforms of those URLs that are compiled and can run now, into `results`;
   * whether that was all of them (else `run` does the rest, never one of these again).
   */
  #runNow(text: string, indexes: readonly number[], results: (TransformResult | undefined)[]): boolean {
    let all = true;
    for (const index of indexes) {
      const result = this.#slots[index]?.compiled?.runJsonNow(text);
      if (result !== undefined) results[index] = result;
      else if (this.#slots[index] !== undefined) all = false;
    }
    return all;
  }

  /**
   * What `run` makes, with the calls asked for in one turn of the event loop run one after another
   * at its end (`setImmediate`): the engine's code and a realm's data then stay in the CPU's caches
   * from one call to the next, where a call made among the rest of the delivery work finds them
   * cold and takes about twice as long. Never rejects for the transforms' failures.
   */
  grouped(text: string, indexes: readonly number[]): Promise<Transformed> {
    return new Promise<Transformed>((resolve, reject) => {
      if (this.#group.push({ text, indexes, resolve, reject }) === 1) setImmediate(() => this.#runGroup());
    });
  }

  #runGroup(): void {
    const group = this.#group;
    this.#group = [];
    for (const call of group) {
      try {
        const results: (TransformResult | undefined)[] = [];
        if (this.#runNow(call.text, call.indexes, results)) call.resolve(gather(results));
        else this.run(call.text, call.indexes, results).then(call.resolve, call.reject);
      } catch (error) {
        call.reject(error);
      }
    }
  }

  /**
   * Runs the transforms of the URLs at `indexes` on `text` (the webhook message's JSON), one after
   * another; those with a result in `results` already are not run again.
   */
  async run(text: string, indexes: readonly number[], results: (TransformResult | undefined)[] = []): Promise<Transformed> {
    for (const index of indexes) {
      const slot = this.#slots[index];
      if (slot === undefined || results[index] !== undefined) continue;
      if (slot.compiled === undefined && slot.failure === undefined) {
        if (this.#disposed) slot.failure = 'the destination was closed';
        else await (slot.ready ??= this.#compile(slot));
      }
      results[index] =
        slot.compiled === undefined ? { ok: false, reason: slot.failure ?? 'the destination was closed', durationMs: 0 } : await slot.compiled.runJson(text);
    }
    return gather(results);
  }

  /** Frees every realm, those still compiling once they are made. */
  async dispose(): Promise<void> {
    this.#disposed = true;
    for (const slot of this.#slots) {
      if (slot === undefined) continue;
      if (slot.ready !== undefined) await slot.ready;
      slot.compiled?.dispose();
      slot.compiled = undefined;
      slot.failure ??= 'the destination was closed';
    }
  }
}

/** The results of a call's transforms, by the URLs' positions, as `Transformed`. */
function gather(results: readonly (TransformResult | undefined)[]): Transformed {
  const bodies: (Buffer | undefined)[] = [];
  const dropped: number[] = [];
  const failed: TransformFailure[] = [];
  results.forEach((result, index) => {
    if (result === undefined) return;
    if (!result.ok) failed.push({ index, reason: result.reason, durationMs: Math.round(result.durationMs) });
    else if (result.skip) dropped.push(index);
    else bodies[index] = result.bytes;
  });
  return { bodies, dropped, failed };
}
