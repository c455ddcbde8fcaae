import * as otel from '@opentelemetry/api';
import { expect } from 'chai';
import { openTelemetry, setOpenTelemetryLoader, traceFieldsOf } from '../../../src/internal/opentelemetry';
import type { OpenTelemetryApi } from '../../../src/internal/opentelemetry';
import { formatTraceparent, parseTraceparent, readTracestate } from '../../../src/internal/trace-context';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';

describe('W3C Trace Context values (internal/trace-context)', () => {
  it('reads a version 00 traceparent: ids and flags', () => {
    expect(parseTraceparent(`00-${TRACE_ID}-${SPAN_ID}-01`)).to.deep.equal({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1 });
    expect(parseTraceparent(`00-${TRACE_ID}-${SPAN_ID}-00`)).to.deep.equal({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 0 });
  });

  it('reads a later version, ignoring the fields it appends', () => {
    expect(parseTraceparent(`cc-${TRACE_ID}-${SPAN_ID}-09-what-comes-next`)).to.deep.equal({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 9 });
  });

  it('refuses what the specification says a receiver must refuse', () => {
    const invalid = [
      undefined, null, 42, '', `00-${TRACE_ID}-${SPAN_ID}`,
      `00-${TRACE_ID}-${SPAN_ID}-01-extra`, // version 00 is exactly 55 characters
      `ff-${TRACE_ID}-${SPAN_ID}-01`, // version ff is invalid
      `00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`, // upper case
      `00-${'0'.repeat(32)}-${SPAN_ID}-01`, // all-zero trace id
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`, // all-zero span id
      `00-${TRACE_ID}-${SPAN_ID}-0g`,
      ` 00-${TRACE_ID}-${SPAN_ID}-01`,
      `00_${TRACE_ID}_${SPAN_ID}_01`,
    ];
    for (const value of invalid) expect(parseTraceparent(value), String(value)).to.equal(undefined);
  });

  it('writes version 00 with two hex digits of flags', () => {
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1 })).to.equal(`00-${TRACE_ID}-${SPAN_ID}-01`);
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 0 })).to.equal(`00-${TRACE_ID}-${SPAN_ID}-00`);
  });

  it('passes on a tracestate that can go in a header as it is, nothing else', () => {
    expect(readTracestate('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7')).to.equal('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    for (const value of [undefined, '', 7, 'a=1\r\nx-forged: yes', 'é=1', 'x'.repeat(9000)]) expect(readTracestate(value), String(value)).to.equal(undefined);
  });
});

describe('openTelemetry(): @opentelemetry/api when the application has it', () => {
  afterEach(() => setOpenTelemetryLoader());

  it('loads the installed package (one registration for every copy of it in the process)', () => {
    // The declarations eventrelay keeps of the API hold for the real one.
    const real: OpenTelemetryApi = otel;
    const api = openTelemetry();
    expect(api).to.not.equal(undefined);
    expect(api!.trace.getTracerProvider()).to.equal(real.trace.getTracerProvider());
  });

  it('is undefined when the package cannot be loaded, and tries only once', () => {
    let tries = 0;
    setOpenTelemetryLoader(() => {
      tries++;
      throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
    });
    expect(openTelemetry()).to.equal(undefined);
    expect(openTelemetry()).to.equal(undefined);
    expect(tries).to.equal(1);
  });

  it('traceFieldsOf gives nothing for the invalid span a no-op tracer makes', () => {
    expect(traceFieldsOf(otel.INVALID_SPAN_CONTEXT)).to.equal(undefined);
    expect(traceFieldsOf({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1 })).to.deep.equal({ traceparent: `00-${TRACE_ID}-${SPAN_ID}-01` });
  });
});
