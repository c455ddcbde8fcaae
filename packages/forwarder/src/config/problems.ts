import { ConfigError, describeType, isPlainObject } from 'eventrelay/internal';
import type { Problem } from '../validation/check';
import type { Env } from './types';

/**
 * The problems of one config (or one admin API body checked by the config's rules), gathered so
 * that one run of `eventrelay check` reports them all. The schema pass comes first (`schema`);
 * then the rules a schema cannot say run on what it found well-typed (`typed`, `clean`), each
 * through `take`, which notes the ConfigError a rule throws and answers undefined.
 */
export class Problems {
  readonly found: ConfigError[] = [];
  private readonly schemaFields: string[] = [];

  /** Notes the schema's problems: the fields at fault, and the rules below them skipped. */
  schema(problems: readonly Problem[]): void {
    for (const p of problems) {
      this.found.push(new ConfigError(p.message, p.field));
      this.schemaFields.push(p.field);
    }
  }

  /** True when the schema found the value at `field` of its declared type (no problem there or above). */
  typed(field: string): boolean {
    return !this.schemaFields.some((p) => p === '' || field === p || field.startsWith(`${p}.`) || field.startsWith(`${p}[`));
  }

  /** True when the schema found nothing at `field`, above it or below it: a rule may read all of it. */
  clean(field: string): boolean {
    return this.typed(field) && !this.schemaFields.some((p) => field === '' || p.startsWith(`${field}.`) || p.startsWith(`${field}[`));
  }

  /** Runs one rule; the ConfigError it throws is noted (with the problems it lists), and undefined answered. */
  take<T>(check: () => T): T | undefined {
    try {
      return check();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      this.found.push(...(error.problems ?? [error]));
      return undefined;
    }
  }

  /** Notes a problem found without a throw. */
  add(problem: ConfigError): void {
    this.found.push(problem);
  }

  /** Throws what was found: the one ConfigError, or one that lists them all (`problems`). */
  throwIfAny(): void {
    const found = this.found;
    if (found.length === 0) return;
    if (found.length === 1) throw found[0]!;
    const lines = found.map((p) => `- ${p.field === undefined || p.field === '' ? 'in the file (top level)' : `at ${p.field}`}: ${p.message}`);
    throw new ConfigError(`The config has ${found.length} problems:\n${lines.join('\n')}`, found[0]!.field, [...found]);
  }
}

export function join(base: string, key: string): string {
  return base === '' ? key : `${base}.${key}`;
}

/**
 * Reads a secret the schema found well-shaped (a non-empty string or `{ "env": NAME }`). Messages
 * name the field and the variable, never the value. `env` null: the value came through the admin
 * API, where `{ "env": NAME }` is refused (an API call must not read the server's environment).
 * `blank` false refuses a value of spaces only.
 */
export function secret(value: unknown, field: string, env: Env | null, blank = true): string {
  if (isPlainObject(value)) {
    if (env === null) {
      throw new ConfigError(`Expected \`${field}\` to be a non-empty string; { "env": NAME } is read in the config file only, not through the admin API`, field);
    }
    const name = value.env as string;
    const resolved = env[name];
    if (resolved === undefined || resolved === '') {
      throw new ConfigError(`\`${field}\` reads the environment variable ${name}, which is not set or empty`, field);
    }
    if (!blank && resolved.trim() === '') {
      throw new ConfigError(`\`${field}\` reads the environment variable ${name}, which holds only spaces`, field);
    }
    return resolved;
  }
  if (typeof value !== 'string' || value === '') {
    // Only a caller that skipped the schema gets here.
    throw new ConfigError(`Expected \`${field}\` to be a non-empty string, got ${describeType(value)}`, field);
  }
  if (!blank && value.trim() === '') {
    throw new ConfigError(`Expected \`${field}\` to be ${env === null ? 'a non-empty string' : 'a non-empty string or { "env": "VARIABLE_NAME" }'}, got a string of spaces only`, field);
  }
  return value;
}
