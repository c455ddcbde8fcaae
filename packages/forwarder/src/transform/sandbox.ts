/**
 * The sandbox a URL's transform runs in: QuickJS compiled to WebAssembly
 * (`quickjs-emscripten-core` with the `@jitl/quickjs-wasmfile-release-sync` build), one realm per
 * transform. A realm is its own WebAssembly instance (its own linear memory), one QuickJS runtime
 * with a memory cap and a stack cap, and one context whose intrinsics are frozen before the
 * user's code runs (prelude.ts). Nothing of the host is put inside: no `require`, `process`,
 * `fetch`, timers, files or network; the message goes in as JSON text and the body comes out as
 * JSON text. docs/transformations.md says why this engine and what each limit does.
 *
 * Code is compiled once, by `compileTransform`; `Transform.run` calls it. A call runs
 * synchronously inside the WebAssembly instance and is stopped by an interrupt handler once it
 * has used `timeoutMs` of CPU time (at most 1 s), or that and a second more on the clock on a
 * machine too busy to give it the CPU: that bounds how long it holds the event loop. Every failure is
 * the transform's: a result `{ ok: false, reason }`, never a throw, and the transform keeps
 * working for its next call. After running out of memory, or when the engine itself stopped
 * (the host's stack ran out under very deep nesting), the realm is thrown away and built again
 * from the same code before the next call.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import releaseSync from '@jitl/quickjs-wasmfile-release-sync';
import { Lifetime, newQuickJSWASMModuleFromVariant, newVariant, type QuickJSContext, type JSValuePointer, type QuickJSHandle, type QuickJSRuntime, type QuickJSWASMModule } from 'quickjs-emscripten-core';
import { durationOption, integerOption, stringOption, ValidationError } from 'eventrelay/internal';
import { TransformCompileError } from './errors';
import { TRANSFORM_CODE_LIMIT } from './options';

export { TRANSFORM_CODE_LIMIT };
import { LOCKDOWN, RUNNER } from './prelude';
import { isUndefined, toJsonBytes } from './binary-json';

/** Largest body a transform may return, in bytes of its JSON text (UTF-8): 512 KB. */
export const TRANSFORM_OUTPUT_LIMIT = 512 * 1024;
/** The file name the code has inside the sandbox, in its error positions. */
const FILE_NAME = 'transform.js';
/** QuickJS's own stack cap: deep recursion fails as a stack overflow well before the host's stack runs out. */
const STACK_BYTES = 256 * 1024;
/** What a call may take on the clock beyond its `timeoutMs` of CPU (see TimeLimit). */
const WALL_GRACE_MS = 1_000;
/** Time the prelude (freezing the intrinsics) may take when a realm is built: our code, not the user's. */
const PRELUDE_MS = 5_000;
/** Longest reason kept from a transform's own error message. */
const REASON_CHARS = 300;
/**
 * A call that took this long (ms) makes the next one of the same transform wait for a turn of the
 * event loop first, so that a transform that loops or crawls lets the process serve requests
 * between its calls; a quick transform never waits.
 */
const SLOW_CALL_MS = 5;

export interface TransformOptions {
  /**
   * CPU time one call may use, in milliseconds, 1 to 1000 (the top level of the code too); a call
   * is also stopped once this and 1 s more have passed on the clock. Default 100.
   */
  readonly timeoutMs?: number;
  /**
   * Memory cap of the transform's realm, in bytes, 16 MiB to 1 GiB: the most its WebAssembly
   * memory may grow to (the engine's data and stack, the heap, the message and the output
   * included). Default 32 MiB. Memory is taken from the system as it is used, not up front.
   */
  readonly memoryBytes?: number;
}

const DEFAULTS = { timeoutMs: 100, memoryBytes: 32 * 1024 * 1024 } as const;

/** What one call gave. `durationMs` is the time the call took, from the host's clock. */
export type TransformResult =
  /**
   * `bytes` is the UTF-8 JSON text to sign and send (serialized once); `body` is that text as a
   * string and `output` the value it parses to, both made on demand.
   */
  | { readonly ok: true; readonly skip: false; readonly bytes: Buffer; readonly body: string; readonly output: unknown; readonly durationMs: number }
  /** The transform returned `null` or `undefined`: this URL gets nothing for this call (`filtered`). */
  | { readonly ok: true; readonly skip: true; readonly durationMs: number }
  /** The call failed; `reason` reads after `transform_failed: ` and holds no part of the message. */
  | { readonly ok: false; readonly reason: string; readonly durationMs: number };

/** A transform compiled in its own realm; `dispose()` frees it. */
export interface Transform {
  readonly timeoutMs: number;
  readonly memoryBytes: number;
  /** Runs the transform on a webhook message (a plain JSON object). Never rejects for the transform's failures. */
  run(message: unknown): Promise<TransformResult>;
  /** The same with the message's JSON text, when the caller has it already. */
  runJson(json: string): Promise<TransformResult>;
  /**
   * The same, at once, when the call can run now; undefined when it must wait (its realm being
   * built again, or its turn after a slow call): then `runJson`.
   */
  runJsonNow(json: string): TransformResult | undefined;
  /** Frees the realm; a later `run` throws. Safe to call twice. */
  dispose(): void;
  /**
   * The size of the realm's linear memory now, in bytes: 16 MiB at first, growing (never
   * shrinking) up to `memoryBytes` as the calls need it; 0 while it is being built again.
   */
  readonly memoryInUse: number;
}

/** A WebAssembly.Memory, as far as this file uses one. */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}

/** Node's WebAssembly global (its TypeScript types declare the namespace's types only). */
const { WebAssembly: wasmApi } = globalThis as unknown as {
  WebAssembly: {
    compile(bytes: Uint8Array): Promise<WebAssembly.Module>;
    Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
  };
};
/** A WebAssembly page, and the pages the QuickJS build starts with (its INITIAL_MEMORY, 16 MiB: code's data, stack, first heap). */
const PAGE = 64 * 1024;
const INITIAL_PAGES = 256;

let wasm: Promise<WebAssembly.Module> | undefined;

/** The QuickJS WebAssembly module, compiled once per process; each realm instantiates it anew. */
function wasmModule(): Promise<WebAssembly.Module> {
  const compiled = (wasm ??= wasmApi.compile(readFileSync(createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm'))).catch((error: unknown) => {
    wasm = undefined;
    throw error;
  }));
  return compiled;
}

/** One realm: a WebAssembly instance, its runtime and context, and the handles a call uses. */
interface Realm {
  readonly runtime: QuickJSRuntime;
  readonly context: QuickJSContext;
  /** The runner's functions (prelude.ts): `call` on the message's JSON text, `serialize` strictly. */
  readonly call: QuickJSHandle;
  readonly serialize: QuickJSHandle;
  readonly transform: QuickJSHandle;
  /**
   * Whether every output goes through the strict serializer: when the code names `toJSON`, whose
   * methods on objects of its own the engine's writer would not call (see binary-json.ts).
   */
  readonly strict: boolean;
  readonly outputLimit: QuickJSHandle;
  /** The realm's linear memory and its maximum in bytes. */
  readonly memory: WasmMemory;
  readonly maxBytes: number;
  readonly time: TimeLimit;
  readonly engine: Engine;
}

/**
 * The engine's entry points one call goes through, taken once per realm: a call then costs no
 * handle objects, no argument array and no string conversion loops in JavaScript (they were most
 * of the host's share of a quick call). What the library's `callFunction`, `newString`, `typeof`
 * and `getString` do is done here with the same C functions, freeing exactly what they free.
 */
interface Engine {
  readonly ffi: Ffi;
  readonly malloc: (bytes: number) => number;
  readonly free: (pointer: number) => void;
  /** The context's JSContext pointer. */
  readonly ctx: number;
  /** `undefined` (a static value of the library), the `this` of the runner's call. */
  readonly undefinedValue: number;
  /** Two pointers, malloc'd once: `call`'s arguments (transform, input); the input's is written per call. */
  readonly argv: number;
  /** Two more: `serialize`'s arguments (output, limit); the output's is written per call. */
  readonly argv2: number;
  /** Views of the linear memory, taken again after it grew (a grown memory has a new buffer). */
  heap: Buffer;
  heap32: Int32Array;
}

/** The C functions of quickjs-emscripten's FFI this file calls directly (pointers as plain numbers). */
interface Ffi {
  QTS_NewString(ctx: number, chars: number): number;
  QTS_Call(ctx: number, fn: number, thisValue: number, argc: number, argv: number): number;
  QTS_ResolveException(ctx: number, value: number): number;
  QTS_FreeValuePointer(ctx: number, value: number): void;
  QTS_Typeof(ctx: number, value: number): number;
  QTS_GetString(ctx: number, value: number): number;
  QTS_FreeCString(ctx: number, chars: number): void;
  /** A malloc'd copy of an ArrayBuffer's bytes, for the caller to free; 0 without room. */
  QTS_GetArrayBuffer(ctx: number, value: number): number;
  QTS_GetArrayBufferLength(ctx: number, value: number): number;
  /** `JS_WriteObject` of a value (references allowed) into a new ArrayBuffer, or an exception. */
  QTS_bjson_encode(ctx: number, value: number): number;
}

/**
 * Reaches the engine below the library's handles. Two of these are not public API: the
 * Emscripten module's `_malloc` and `_free` (the FFI object's `module`) and the context's
 * pointer (its protected `ctx`); the FFI itself comes from `getFFI()`, marked unstable. That is
 * why quickjs-emscripten-core and @jitl/quickjs-wasmfile-release-sync are pinned to an exact
 * version (0.32.0) in package.json: an upgrade must check `ModuleMemory`, `ContextMemory` and
 * `QuickJSContext.callFunction` in its dist again. A shape not found here fails the compile of
 * every transform at once (and the tests), never a call.
 */
function engineOf(module: QuickJSWASMModule, context: QuickJSContext, memory: WasmMemory, transform: QuickJSHandle, limit: QuickJSHandle): Engine {
  const ffi = module.getFFI() as unknown as Ffi & { module?: { _malloc?: unknown; _free?: unknown } };
  const ctx = (context as unknown as { ctx?: { value?: unknown } }).ctx?.value;
  const { _malloc: malloc, _free: free } = ffi.module ?? {};
  const names = [
    'QTS_NewString',
    'QTS_Call',
    'QTS_ResolveException',
    'QTS_FreeValuePointer',
    'QTS_Typeof',
    'QTS_GetString',
    'QTS_FreeCString',
    'QTS_GetArrayBuffer',
    'QTS_GetArrayBufferLength',
    'QTS_bjson_encode',
  ] as const;
  if (typeof malloc !== 'function' || typeof free !== 'function' || typeof ctx !== 'number' || names.some((name) => typeof ffi[name] !== 'function')) {
    throw new Error('quickjs-emscripten-core is not the version this sandbox was written for (0.32.0): its FFI, module or context pointer were not found');
  }
  const argv = (malloc as (bytes: number) => number)(4 * 4);
  if (argv === 0) throw new Error('the sandbox could not allocate its call arguments');
  const engine: Engine = {
    ffi,
    malloc: malloc as (bytes: number) => number,
    free: free as (pointer: number) => void,
    ctx,
    undefinedValue: context.undefined.value,
    argv,
    argv2: argv + 2 * 4,
    heap: Buffer.from(memory.buffer),
    heap32: new Int32Array(memory.buffer),
  };
  engine.heap32[argv >> 2] = transform.value;
  engine.heap32[(engine.argv2 >> 2) + 1] = limit.value;
  return engine;
}

/** The linear memory's views, current: after anything that may have grown it (a malloc, a call). */
function heapOf(realm: Realm): Engine {
  const { engine } = realm;
  const buffer = realm.memory.buffer;
  if (engine.heap.buffer !== buffer) {
    engine.heap = Buffer.from(buffer);
    engine.heap32 = new Int32Array(buffer);
  }
  return engine;
}

/**
 * The message as a QuickJS string (a JSValue pointer to free), as `context.newString` makes it:
 * its UTF-8 in a malloc'd C string of the same size, `QTS_NewString`, the C string freed. A text
 * with a lone surrogate goes through the library (its encoder writes those as WTF-8, Node's as
 * U+FFFD), as does one the heap has no room for (the library then fails as it always did).
 */
function newInput(realm: Realm, json: string): { value: number; handle?: QuickJSHandle } {
  const bytes = json.isWellFormed() ? Buffer.byteLength(json) : -1;
  const chars = bytes < 0 ? 0 : realm.engine.malloc(bytes + 1);
  if (chars === 0) {
    const handle = realm.context.newString(json);
    return { value: handle.value, handle };
  }
  const engine = heapOf(realm);
  try {
    engine.heap.write(json, chars, bytes, 'utf8');
    engine.heap[chars + bytes] = 0;
    return { value: engine.ffi.QTS_NewString(engine.ctx, chars) };
  } finally {
    engine.free(chars);
  }
}

/**
 * A C string the engine made, read up to its NUL as `UTF8ToString` reads it, invalid bytes as
 * U+FFFD alike; the one difference, a leading byte order mark that TextDecoder drops, cannot
 * start a JSON text. The caller frees it.
 */
function readCString(realm: Realm, chars: number): string {
  const { heap } = heapOf(realm);
  const end = heap.indexOf(0, chars);
  return heap.toString('utf8', chars, end < 0 ? heap.length : end);
}

/** What a call made: the body's bytes, a skip, a throw, or the pointer of an answer of the runner's (see `answer`). */
type Invoked = { bytes: Buffer } | { skip: true } | { error: QuickJSHandle } | { value: number };

/**
 * A pending exception's value as a handle of the library that frees it, or undefined when `result`
 * is not an exception (`result` itself is freed when it is one).
 */
function exceptionOf(realm: Realm, result: number): QuickJSHandle | undefined {
  const { ffi, ctx } = realm.engine;
  const error = ffi.QTS_ResolveException(ctx, result);
  if (error === 0) return undefined;
  ffi.QTS_FreeValuePointer(ctx, result);
  const free = (pointer: JSValuePointer) => ffi.QTS_FreeValuePointer(ctx, pointer);
  return new Lifetime<JSValuePointer, JSValuePointer, QuickJSRuntime>(error as JSValuePointer, undefined, free, realm.context.runtime);
}

/**
 * One call: the message's JSON text into the realm (parsed there by `call`), the transform on it,
 * and its output written by the engine as binary JSON and read into JSON text here; an output
 * that is not plain JSON data, or any output when the code names `toJSON`, goes through the
 * strict serializer instead.
 */
function invoke(realm: Realm, json: string): Invoked {
  const { ffi, ctx } = realm.engine;
  const input = newInput(realm, json);
  const engine = heapOf(realm);
  engine.heap32[(engine.argv >> 2) + 1] = input.value;
  const output = ffi.QTS_Call(ctx, realm.call.value, engine.undefinedValue, 2, engine.argv);
  if (input.handle === undefined) ffi.QTS_FreeValuePointer(ctx, input.value);
  else input.handle.dispose();
  const thrown = exceptionOf(realm, output);
  if (thrown !== undefined) return { error: thrown };
  try {
    const read = realm.strict ? undefined : readWritten(realm, output);
    if (read !== undefined) return read;
    if (typeOf(realm, output) === 'u') return { skip: true };
    const strict = heapOf(realm);
    strict.heap32[strict.argv2 >> 2] = output;
    const answer = ffi.QTS_Call(ctx, realm.serialize.value, strict.undefinedValue, 2, strict.argv2);
    const failed = exceptionOf(realm, answer);
    return failed === undefined ? { value: answer } : { error: failed };
  } finally {
    ffi.QTS_FreeValuePointer(ctx, output);
  }
}

/**
 * The output as the engine writes it (binary JSON), read into its JSON bytes or a skip; undefined
 * when the engine refuses to write it (a function, a symbol, a getter, ...), has no room for the
 * copy, or wrote what `toJsonBytes` leaves to the strict serializer.
 */
function readWritten(realm: Realm, output: number): { bytes: Buffer } | { skip: true } | undefined {
  const { ffi, ctx, free } = realm.engine;
  const written = ffi.QTS_bjson_encode(ctx, output);
  const refused = exceptionOf(realm, written);
  if (refused !== undefined) {
    refused.dispose();
    return undefined;
  }
  const length = ffi.QTS_GetArrayBufferLength(ctx, written);
  // A malloc'd copy of the ArrayBuffer's bytes (0 when there was no room for one): freed here.
  const at = ffi.QTS_GetArrayBuffer(ctx, written);
  ffi.QTS_FreeValuePointer(ctx, written);
  if (at === 0) return undefined;
  try {
    const { heap } = heapOf(realm);
    // A skip (`call` answers undefined for null and undefined) is written as undefined alone.
    if (isUndefined(heap, at, at + length)) return { skip: true };
    const bytes = toJsonBytes(heap, at, at + length, TRANSFORM_OUTPUT_LIMIT);
    return bytes === undefined ? undefined : { bytes };
  } finally {
    free(at);
  }
}

/** The first letter of a value's `typeof`, read as `context.typeof` reads it (a malloc'd C string, freed here). */
function typeOf(realm: Realm, value: number): string {
  const { ffi, ctx, free } = realm.engine;
  const chars = ffi.QTS_Typeof(ctx, value);
  const letter = chars === 0 ? '' : heapOf(realm).heap.toString('latin1', chars, chars + 1);
  free(chars);
  return letter;
}

/**
 * When running code is stopped (QuickJS asks `expired` every few thousand operations): once the
 * call has used its time in CPU, so that a busy machine does not fail a transform that is merely
 * waiting for a core, or once that time and a second more have passed on the clock, which bounds
 * how long the event loop is held in any case.
 */
class TimeLimit {
  timedOut = false;
  private wallStart = 0;
  private wallDeadline = 0;
  private budgetMicros = 0;
  /** The process's CPU time at the first check of this call (undefined before it), and the clock's time then. */
  private cpuStart: NodeJS.CpuUsage | undefined;
  private checkedAt = 0;

  /**
   * A call starts: no system call here (a call of a quick transform never reaches a check). The
   * CPU time is read from the first check on; the time before it counts as CPU time.
   */
  start(ms: number): void {
    this.timedOut = false;
    this.wallStart = performance.now();
    this.wallDeadline = this.wallStart + ms + WALL_GRACE_MS;
    this.budgetMicros = ms * 1000;
    this.cpuStart = undefined;
  }

  readonly expired = (): boolean => {
    const now = performance.now();
    if (now <= this.wallDeadline) {
      if (this.cpuStart === undefined) {
        this.cpuStart = process.cpuUsage();
        this.checkedAt = now;
      }
      // Less time on the clock than the budget: less CPU time too (one thread runs the call).
      if ((now - this.wallStart) * 1000 < this.budgetMicros) return false;
      const used = process.cpuUsage(this.cpuStart);
      if (used.user + used.system + (this.checkedAt - this.wallStart) * 1000 < this.budgetMicros) return false;
    }
    this.timedOut = true;
    return true;
  };
}

/** `transform.js:3:11` in a QuickJS stack: the first place in the user's code. */
function position(stack: unknown): { line: number; column: number } | undefined {
  const match = typeof stack === 'string' ? /transform\.js:(\d+):(\d+)/.exec(stack) : null;
  return match === null ? undefined : { line: Number(match[1]), column: Number(match[2]) };
}

function clip(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > REASON_CHARS ? `${line.slice(0, REASON_CHARS)}…` : line;
}

function megabytes(bytes: number): string {
  return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;
}

/** What a failed evaluation threw, read from the host side with guards (a getter runs under the same deadline). */
interface Thrown {
  /** `name` and `message` of an Error (or of any object that has them). */
  readonly name?: string;
  readonly message?: string;
  readonly stack?: string;
  /** Otherwise: a thrown string, or what was thrown (`a number`, `an object`, ...). */
  readonly other?: string;
}

function thrown(context: QuickJSContext, handle: QuickJSHandle): Thrown {
  try {
    const type = context.typeof(handle);
    if (type === 'string') return { other: JSON.stringify(context.getString(handle)) };
    if (type !== 'object') return { other: type === 'undefined' ? 'undefined' : `a ${type}` };
    if (context.sameValue(handle, context.null)) return { other: 'null' };
    const read = (key: string): string | undefined => {
      const prop = context.getProp(handle, key);
      try {
        return context.typeof(prop) === 'string' ? context.getString(prop) : undefined;
      } finally {
        prop.dispose();
      }
    };
    const name = read('name');
    const message = read('message');
    return name === undefined && message === undefined ? { other: 'an object that is not an Error' } : { name: name ?? 'Error', message: message ?? '', stack: read('stack') };
  } catch {
    return { other: 'a value that could not be read' };
  }
}

/** A reason from what was thrown: `TypeError: x is not a function (line 3, column 11)`, `threw "missing email"`. */
function describeThrown(error: Thrown): string {
  if (error.name === undefined) return clip(`threw ${error.other ?? 'a value'}`);
  const where = position(error.stack);
  return clip(`${error.name}: ${error.message ?? ''}`) + (where === undefined ? '' : ` (line ${where.line}, column ${where.column})`);
}

async function buildRealm(code: string, timeoutMs: number, memoryBytes: number): Promise<Realm> {
  // The realm's linear memory, made here with a maximum: the hard cap. QuickJS's own limit
  // (setMemoryLimit) bounds one allocation but not their sum in this build, whose malloc does not
  // report sizes; a memory that cannot grow makes malloc fail, and QuickJS throw "out of memory".
  const wasmMemory = new wasmApi.Memory({ initial: INITIAL_PAGES, maximum: Math.ceil(memoryBytes / PAGE) });
  const module = await newQuickJSWASMModuleFromVariant(newVariant(releaseSync, { wasmModule, wasmMemory }));
  const runtime = module.newRuntime();
  const time = new TimeLimit();
  time.start(PRELUDE_MS);
  runtime.setMemoryLimit(memoryBytes);
  runtime.setMaxStackSize(STACK_BYTES);
  runtime.setInterruptHandler(time.expired);
  const context = runtime.newContext();
  const handles: QuickJSHandle[] = [];
  try {
    context.unwrapResult(context.evalCode(LOCKDOWN, 'lockdown.js')).dispose();
    const runners = context.unwrapResult(context.evalCode(RUNNER, 'runner.js'));
    const [call, serialize] = [0, 1].map((index) => context.getProp(runners, index));
    runners.dispose();
    handles.push(call!, serialize!);
    // One call of each runner function and one write of binary JSON before the user's code: the
    // engine's functions V8 compiles on first use are then compiled here, not in a call's time limit.
    const warm = context.unwrapResult(context.evalCode('(function (m) { return m; })', 'warm.js'));
    const sample = context.newString('{"type":"track","n":[1,2.5,true,null],"o":{"s":"x"}}');
    const limit = context.newNumber(TRANSFORM_OUTPUT_LIMIT);
    const echoed = context.unwrapResult(context.callFunction(call!, context.undefined, warm, sample));
    const text = context.unwrapResult(context.callFunction(serialize!, context.undefined, echoed, limit));
    const written = context.encodeBinaryJSON(echoed);
    for (const handle of [warm, sample, limit, echoed, text, written]) handle.dispose();
    time.start(timeoutMs);
    const evaluated = context.evalCode(code, FILE_NAME);
    if (evaluated.error !== undefined) {
      const error = thrown(context, evaluated.error);
      evaluated.error.dispose();
      if (time.timedOut) throw new TransformCompileError(`Expected \`code\` to define \`function transform(message)\`: its top level ran over ${timeoutMs} ms`);
      const where = position(error.stack);
      const what = error.name === undefined ? `threw ${error.other ?? 'a value'}` : `${error.name}: ${error.message ?? ''}`;
      const lead = error.name === 'SyntaxError' ? 'does not compile' : 'failed at its top level';
      throw new TransformCompileError(`Expected \`code\` to be JavaScript that defines \`function transform(message)\`: it ${lead}, ${clip(what)}`, where?.line, where?.column);
    }
    evaluated.value.dispose();
    // A `function transform` is a global; `const transform = ...` is a binding of the script scope: this finds either.
    const found = context.unwrapResult(context.evalCode(`typeof transform === 'function' ? transform : undefined`, 'find.js'));
    handles.push(found);
    if (context.typeof(found) !== 'function') {
      throw new TransformCompileError('Expected `code` to define `function transform(message)`, which returns the body to send (or null to skip); found none');
    }
    const outputLimit = context.newNumber(TRANSFORM_OUTPUT_LIMIT);
    handles.push(outputLimit);
    const engine = engineOf(module, context, wasmMemory, found, outputLimit);
    return {
      runtime,
      context,
      call: call!,
      serialize: serialize!,
      strict: /toJSON/.test(code),
      transform: found,
      outputLimit,
      memory: wasmMemory,
      maxBytes: Math.ceil(memoryBytes / PAGE) * PAGE,
      time,
      engine,
    };
  } catch (error) {
    for (const handle of handles) handle.dispose();
    context.dispose();
    runtime.dispose();
    throw error;
  }
}

function disposeRealm(realm: Realm): void {
  try {
    realm.outputLimit.dispose();
    realm.transform.dispose();
    realm.call.dispose();
    realm.serialize.dispose();
    realm.context.dispose();
    realm.runtime.dispose();
    realm.engine.free(realm.engine.argv);
  } catch {
    // A realm whose engine stopped mid-call may not free cleanly: its whole instance is dropped anyway.
  }
}

/**
 * Compiles `code` (which defines `function transform(message)`) in a realm of its own. Rejects
 * with a `TransformCompileError` (field `code`, with line and column) when it does not compile,
 * its top level throws or loops, or it defines no `transform`; with a `ConfigError` for options
 * out of range.
 */
export async function compileTransform(code: string, options: TransformOptions = {}): Promise<Transform> {
  stringOption('code', code, 'the source of `function transform(message)`');
  if (Buffer.byteLength(code) > TRANSFORM_CODE_LIMIT) throw new ValidationError(`Expected \`code\` to be at most ${TRANSFORM_CODE_LIMIT} bytes, got ${Buffer.byteLength(code)}`, 'code');
  const timeoutMs = durationOption('timeoutMs', options.timeoutMs ?? DEFAULTS.timeoutMs, 1, 1000);
  const memoryBytes = integerOption('memoryBytes', options.memoryBytes ?? DEFAULTS.memoryBytes, INITIAL_PAGES * PAGE, 1024 * 1024 * 1024);
  return new SandboxedTransform(code, timeoutMs, memoryBytes, await buildRealm(code, timeoutMs, memoryBytes));
}

class SandboxedTransform implements Transform {
  private realm: Realm | undefined;
  private rebuilding: Promise<void> | undefined;
  private disposed = false;
  /** Whether the last call took SLOW_CALL_MS or more. */
  private slow = false;
  /** Settles when the last call queued by `inTurn` has ended. */
  private turns: Promise<void> = Promise.resolve();

  constructor(
    private readonly code: string,
    readonly timeoutMs: number,
    readonly memoryBytes: number,
    realm: Realm,
  ) {
    this.realm = realm;
  }

  run(message: unknown): Promise<TransformResult> {
    return this.runJson(JSON.stringify(message));
  }

  get memoryInUse(): number {
    return this.realm?.memory.buffer.byteLength ?? 0;
  }

  runJsonNow(json: string): TransformResult | undefined {
    if (this.disposed || this.realm === undefined || this.slow) return undefined;
    const result = this.call(this.realm, json);
    this.slow = result.durationMs >= SLOW_CALL_MS;
    return result;
  }

  async runJson(json: string): Promise<TransformResult> {
    if (this.disposed) throw new Error('This transform was disposed: compile it again to run it');
    if (this.realm === undefined) {
      const started = performance.now();
      try {
        await (this.rebuilding ??= this.rebuild());
      } catch (error) {
        return { ok: false, reason: `the sandbox could not be rebuilt: ${clip(error instanceof Error ? error.message : String(error))}`, durationMs: performance.now() - started };
      }
      if (this.disposed || this.realm === undefined) throw new Error('This transform was disposed: compile it again to run it');
    }
    if (this.slow) return this.inTurn(json);
    const result = this.call(this.realm, json);
    this.slow = result.durationMs >= SLOW_CALL_MS;
    return result;
  }

  /**
   * A call after a slow one: calls of this transform then go one per turn of the event loop, each
   * after the one before it has ended, so that the I/O that came meanwhile is served in between
   * (calls queued at once would otherwise all run in the same turn).
   */
  private async inTurn(json: string): Promise<TransformResult> {
    const before = this.turns;
    let release!: () => void;
    this.turns = new Promise<void>((resolve) => (release = resolve));
    try {
      await before;
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.disposed) throw new Error('This transform was disposed: compile it again to run it');
      if (this.realm === undefined) {
        this.slow = false;
        return await this.runJson(json);
      }
      const result = this.call(this.realm, json);
      this.slow = result.durationMs >= SLOW_CALL_MS;
      return result;
    } finally {
      release();
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.realm !== undefined) disposeRealm(this.realm);
    this.realm = undefined;
  }

  private async rebuild(): Promise<void> {
    try {
      const realm = await buildRealm(this.code, this.timeoutMs, this.memoryBytes);
      if (this.disposed) disposeRealm(realm);
      else this.realm = realm;
    } finally {
      this.rebuilding = undefined;
    }
  }

  /**
   * Drops the realm after it ran out of memory: the next call builds a new one from the same code,
   * in a new WebAssembly instance (a linear memory never shrinks; the old one is garbage).
   */
  private discard(realm: Realm): void {
    this.realm = undefined;
    disposeRealm(realm);
  }

  private call(realm: Realm, json: string): TransformResult {
    const started = performance.now();
    realm.time.start(this.timeoutMs);
    let result: Invoked;
    try {
      result = invoke(realm, json);
    } catch (error) {
      // The engine itself stopped (the host's stack ran out under very deep nesting, or a trap):
      // nothing in its instance is trusted again, not even to free it. It is dropped whole.
      this.realm = undefined;
      const why = error instanceof RangeError ? 'stack overflow (recursion or nesting too deep)' : `the engine stopped (${clip(error instanceof Error ? error.message : String(error))})`;
      return { ok: false, reason: `${why}; the sandbox was rebuilt`, durationMs: performance.now() - started };
    }
    const durationMs = () => performance.now() - started;
    if ('bytes' in result) return bodyResult(result.bytes, durationMs());
    if ('skip' in result) return { ok: true, skip: true, durationMs: durationMs() };
    if ('error' in result) {
      const error = thrown(realm.context, result.error);
      result.error.dispose();
      if (realm.time.timedOut) return { ok: false, reason: `timed out after ${this.timeoutMs} ms`, durationMs: durationMs() };
      // With its heap full, even the error may not be readable: a failure that leaves the memory
      // grown to nearly its maximum is taken for running out of it.
      const full = realm.memory.buffer.byteLength >= realm.maxBytes * 0.9 && error.name === undefined;
      if ((error.name === 'InternalError' && error.message === 'out of memory') || full) {
        this.discard(realm);
        return { ok: false, reason: `ran out of memory (cap ${megabytes(this.memoryBytes)}); the sandbox was rebuilt`, durationMs: durationMs() };
      }
      return { ok: false, reason: describeThrown(error), durationMs: durationMs() };
    }
    try {
      return this.answer(realm, result.value, durationMs);
    } catch (error) {
      // Reading the answer out failed in the engine (a full heap): the realm is dropped whole.
      this.realm = undefined;
      return { ok: false, reason: `the engine stopped (${clip(error instanceof Error ? error.message : String(error))}); the sandbox was rebuilt`, durationMs: durationMs() };
    }
  }

  /**
   * The strict serializer's answer (a JSValue pointer, freed here): the body's JSON text, or
   * `{ reason }`. A string is read as `context.getString` reads it (`QTS_GetString`, freed with
   * `QTS_FreeCString`).
   */
  private answer(realm: Realm, value: number, durationMs: () => number): TransformResult {
    const { ffi, ctx } = realm.engine;
    try {
      if (typeOf(realm, value) === 'o') {
        // A failure the runner named: read through the library, with a handle that borrows the value.
        const { context } = realm;
        const reason = context.getProp(new Lifetime<JSValuePointer, JSValuePointer, QuickJSRuntime>(value as JSValuePointer, undefined, undefined, context.runtime), 'reason');
        try {
          return { ok: false, reason: context.getString(reason), durationMs: durationMs() };
        } finally {
          reason.dispose();
        }
      }
      const chars = ffi.QTS_GetString(ctx, value);
      // No C string: the engine could not make one (its heap is full), not an empty body.
      if (chars === 0) throw new Error('the output could not be read out');
      const body = readCString(realm, chars);
      ffi.QTS_FreeCString(ctx, chars);
      return bodyResult(Buffer.from(body, 'utf8'), durationMs());
    } finally {
      ffi.QTS_FreeValuePointer(ctx, value);
    }
  }
}

/** A body made, or a failure when it is over the output limit. */
function bodyResult(bytes: Buffer, durationMs: number): TransformResult {
  if (bytes.length > TRANSFORM_OUTPUT_LIMIT) return { ok: false, reason: `output is ${bytes.length} bytes, over the limit of ${TRANSFORM_OUTPUT_LIMIT}`, durationMs };
  return {
    ok: true,
    skip: false,
    bytes,
    durationMs,
    get body(): string {
      return bytes.toString('utf8');
    },
    get output(): unknown {
      return JSON.parse(bytes.toString('utf8')) as unknown;
    },
  };
}
