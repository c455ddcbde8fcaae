/**
 * The JavaScript a realm evaluates before the user's code, inside the sandbox. Kept as source
 * text: it runs in QuickJS, never in Node.
 *
 * `LOCKDOWN` freezes every object reachable from the global object's own properties (the
 * intrinsics: `Object.prototype`, `Array.prototype`, `JSON`, `Math`, ...) and makes those
 * global bindings read-only, so a transform that changes a prototype changes nothing: not for its
 * next call, and never for another transform (which has its own realm anyway). A transform may
 * still add globals of its own; those are its state between calls, like a module's. The few
 * properties code commonly assigns on its own objects (`name`, `message`, `constructor`,
 * `toString`, `valueOf`) still can be: see `tame`.
 *
 * `RUNNER` makes the two functions the host calls, as an array, capturing what they need before
 * user code exists:
 * - `call(transform, input)`: the transform on the message parsed from its JSON text, its output
 *   as it is, `undefined` for "skip" (`null` or `undefined` returned); a throw passes through;
 * - `serialize(output, limit)`: an output serialized strictly, for the outputs the host does not
 *   read from the engine's binary JSON itself (binary-json.ts): a function, `undefined` inside, a
 *   symbol, a BigInt, NaN or Infinity, a cycle or a Promise is a failure naming where it is, never
 *   a value JSON.stringify would silently drop or turn into null. It answers the JSON text, or
 *   `{ reason }` when the output is not JSON or is over the size limit.
 */

export const LOCKDOWN = `(function () {
  'use strict';
  const seen = new Set();
  const todo = [];
  // Assigning \`name\`, \`message\`, \`constructor\`, \`toString\` or \`valueOf\` on an object of
  // one's own (a custom error, an old-style class) must keep working although the prototype that
  // holds the inherited one is frozen: those become accessors that define the property on the
  // object assigned to, and refuse it on the shared prototype.
  const tame = (proto, key) => {
    const desc = Reflect.getOwnPropertyDescriptor(proto, key);
    if (desc === undefined || !('value' in desc) || !desc.configurable) return;
    const value = desc.value;
    Reflect.defineProperty(proto, key, {
      get() { return value; },
      set(next) {
        if (this === proto) throw new TypeError('Cannot change ' + String(key) + ' of a built-in prototype: they are frozen');
        Reflect.defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
      },
      enumerable: desc.enumerable,
      configurable: false,
    });
  };
  for (const key of Reflect.ownKeys(globalThis)) {
    const ctor = Reflect.getOwnPropertyDescriptor(globalThis, key).value;
    const proto = typeof ctor === 'function' ? ctor.prototype : undefined;
    if (proto !== null && typeof proto === 'object') for (const name of ['constructor', 'name', 'message', 'toString', 'valueOf']) tame(proto, name);
  }
  for (const key of Reflect.ownKeys(globalThis)) {
    const desc = Reflect.getOwnPropertyDescriptor(globalThis, key);
    todo.push(desc.value, desc.get, desc.set);
    if (desc.configurable) Reflect.defineProperty(globalThis, key, { writable: false, configurable: false });
  }
  todo.push(Object.getPrototypeOf(globalThis));
  while (todo.length > 0) {
    const value = todo.pop();
    if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value) || value === globalThis) continue;
    seen.add(value);
    todo.push(Object.getPrototypeOf(value));
    for (const key of Reflect.ownKeys(value)) {
      const desc = Reflect.getOwnPropertyDescriptor(value, key);
      todo.push(desc.value, desc.get, desc.set);
    }
  }
  for (const value of seen) Object.freeze(value);
  return seen.size;
})()`;

export const RUNNER = `(function () {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const isArray = Array.isArray;
  const keys = Object.keys;
  const isFinite = Number.isFinite;
  const PromiseClass = Promise;
  const SetClass = Set;
  const MARK = {};
  let bad = false;

  // Called for every value serialized: the common types are answered first (it is most of a
  // call's cost in the interpreter). Refused: a function, a symbol, a BigInt, undefined, NaN or
  // Infinity, a Promise.
  function check(key, value) {
    const type = typeof value;
    if (type === 'string' || type === 'boolean') return value;
    if (type === 'object') {
      if (value === null || !(value instanceof PromiseClass)) return value;
    } else if (type === 'number' && isFinite(value)) {
      return value;
    }
    bad = true;
    throw MARK;
  }

  function what(value) {
    if (value === undefined) return 'undefined';
    if (typeof value === 'function') return 'a function';
    if (typeof value === 'symbol') return 'a symbol';
    if (typeof value === 'bigint') return 'a BigInt';
    if (typeof value === 'number') return String(value);
    if (value instanceof PromiseClass) return 'a Promise (transform must return its value, not a Promise: it runs synchronously)';
    return typeof value;
  }

  function field(path, key) {
    return typeof key === 'number' ? path + '[' + key + ']' : /^[A-Za-z_$][\\w$]*$/.test(key) ? path + '.' + key : path + '[' + stringify(key) + ']';
  }

  // Only after a failure: where the first value that is not JSON sits, and what it is.
  function locate(value, path, open) {
    if (value !== null && typeof value === 'object' && typeof value.toJSON === 'function' && !(value instanceof PromiseClass)) value = value.toJSON();
    const type = typeof value;
    if (type === 'function' || type === 'symbol' || type === 'bigint' || type === 'undefined' || (type === 'number' && !isFinite(value)) || value instanceof PromiseClass) {
      return path + ' is ' + what(value);
    }
    if (value === null || type !== 'object') return undefined;
    if (open.has(value)) return path + ' refers back to an object that contains it (a cycle)';
    open.add(value);
    const names = isArray(value) ? value.map((_, i) => i) : keys(value);
    for (const key of names) {
      const found = locate(value[key], field(path, key), open);
      if (found !== undefined) return found;
    }
    open.delete(value);
    return undefined;
  }

  function call(transform, input) {
    const output = transform(parse(input));
    return output === null ? undefined : output;
  }

  function serialize(output, limit) {
    let text;
    bad = false;
    try {
      text = stringify(output, check);
    } catch (error) {
      if (error !== MARK && !(error instanceof TypeError)) throw error;
      const where = bad || error instanceof TypeError ? locate(output, 'output', new SetClass()) : undefined;
      if (where !== undefined) return { reason: 'output is not JSON: ' + where };
      throw error;
    }
    if (text.length > limit) return { reason: 'output is over ' + limit + ' bytes (' + text.length + ' characters or more)' };
    return text;
  }

  return [call, serialize];
})()`;
