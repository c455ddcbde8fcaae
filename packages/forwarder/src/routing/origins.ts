/**
 * The browser origins a source takes calls from (its `allowedOrigins`), made once per setup
 * snapshot and read per request: an exact match on the `Origin` header as browsers send it, or
 * any origin when the list holds `*`.
 */
export class AllowedOrigins {
  /** No origin at all: what a source without `allowedOrigins` has. */
  static readonly NONE = new AllowedOrigins([]);

  private readonly exact: ReadonlySet<string>;
  /** True when the list holds `*`. */
  readonly any: boolean;

  constructor(list: Iterable<string>) {
    const set = new Set(list);
    this.any = set.delete('*');
    this.exact = set;
  }

  /** Whether a request whose `Origin` header is `origin` may come in. */
  allows(origin: string): boolean {
    return this.any || this.exact.has(origin);
  }

  /** True when no origin is allowed. */
  get empty(): boolean {
    return !this.any && this.exact.size === 0;
  }

  /** The union of several lists: what a preflight, which names no source, is answered for. */
  static union(lists: Iterable<AllowedOrigins>): AllowedOrigins {
    const all: string[] = [];
    for (const list of lists) {
      if (list.any) return new AllowedOrigins(['*']);
      all.push(...list.exact);
    }
    return all.length === 0 ? AllowedOrigins.NONE : new AllowedOrigins(all);
  }
}
