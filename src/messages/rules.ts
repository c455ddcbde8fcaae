import { ValidationError } from '../errors';
import type { MessageType } from './calls';

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function requireString(params: Record<string, unknown>, field: string, type: MessageType): ValidationError | undefined {
  const value = params[field];
  if (typeof value !== 'string' || value.length === 0) {
    return new ValidationError(
      `${type}() needs \`${field}\` as a non-empty string, got ${value === '' ? 'an empty string' : kind(value)}`,
      field,
    );
  }
  return undefined;
}

function optionalString(params: Record<string, unknown>, field: string, type: MessageType): ValidationError | undefined {
  const value = params[field];
  if (value !== undefined && typeof value !== 'string') {
    return new ValidationError(`${type}() takes \`${field}\` as a string, got ${kind(value)}`, field);
  }
  return undefined;
}

function optionalObject(params: Record<string, unknown>, field: string, type: MessageType): ValidationError | undefined {
  const value = params[field];
  if (value !== undefined && !isPlainObject(value)) {
    return new ValidationError(`${type}() takes \`${field}\` as an object, got ${kind(value)}`, field);
  }
  return undefined;
}

/** Parses a caller's timestamp; undefined when it is not a valid date. */
export function parseTimestamp(value: unknown): Date | undefined {
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  return date !== undefined && !Number.isNaN(date.getTime()) ? date : undefined;
}

/**
 * The rules of spec 2.4, checked at run time for callers without TypeScript:
 * userId or anonymousId on every call but alias; `event` on track; `groupId` on group;
 * `userId` and `previousId` on alias; optional fields of the right type.
 */
export function validateParams(type: MessageType, params: unknown): ValidationError | undefined {
  if (!isPlainObject(params)) {
    return new ValidationError(`${type}() takes an object of parameters, got ${kind(params)}`);
  }
  const error =
    optionalString(params, 'userId', type) ??
    optionalString(params, 'anonymousId', type) ??
    optionalString(params, 'messageId', type) ??
    optionalObject(params, 'context', type) ??
    optionalObject(params, 'integrations', type) ??
    checkTimestamp(params, type) ??
    checkType(type, params);
  if (error) return error;
  if (type !== 'alias' && !params.userId && !params.anonymousId) {
    return new ValidationError(`${type}() needs \`userId\` or \`anonymousId\` (a non-empty string); neither was given`, 'userId');
  }
  return undefined;
}

function checkTimestamp(params: Record<string, unknown>, type: MessageType): ValidationError | undefined {
  if (params.timestamp === undefined || parseTimestamp(params.timestamp) !== undefined) return undefined;
  return new ValidationError(
    `${type}() takes \`timestamp\` as a Date or an ISO 8601 string, got ${typeof params.timestamp === 'string' ? 'a string that is not a date' : kind(params.timestamp)}`,
    'timestamp',
  );
}

function checkType(type: MessageType, params: Record<string, unknown>): ValidationError | undefined {
  switch (type) {
    case 'identify':
      return optionalObject(params, 'traits', type);
    case 'track':
      return requireString(params, 'event', type) ?? optionalObject(params, 'properties', type);
    case 'page':
    case 'screen':
      return (
        optionalString(params, 'name', type) ??
        optionalString(params, 'category', type) ??
        optionalObject(params, 'properties', type)
      );
    case 'group':
      return requireString(params, 'groupId', type) ?? optionalObject(params, 'traits', type);
    case 'alias':
      return requireString(params, 'userId', type) ?? requireString(params, 'previousId', type);
  }
}
