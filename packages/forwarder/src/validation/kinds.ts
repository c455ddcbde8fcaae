import { Type } from '@sinclair/typebox';
import type { Static, TSchema, TUnion, TUnsafe } from '@sinclair/typebox';

/** `oneOf` (TypeBox's Union writes `anyOf`): exactly one of the schemas. */
export function OneOf<T extends TSchema[]>(schemas: [...T], options: object = {}): TUnsafe<Static<TUnion<T>>> {
  return Type.Unsafe<Static<TUnion<T>>>({ ...options, oneOf: schemas });
}

/** A string enum, written as JSON Schema's `enum`. */
export function Enum<const T extends readonly (string | number)[]>(values: T, options: object = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, type: typeof values[0] === 'number' ? 'integer' : 'string', enum: values });
}

/** A string of one of several literals, or null: what answers carry for an optional value. */
export function Nullable<T extends TSchema>(schema: T, options: object = {}): TUnion<[T, ReturnType<typeof Type.Null>]> {
  return Type.Union([schema, Type.Null()], options);
}
