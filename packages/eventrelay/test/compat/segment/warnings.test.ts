import createDebug from 'debug';
import { expect } from 'chai';
import { createSegmentClient, warningsDuring } from '../helpers';

describe('eventrelay/segment unknown and unsupported settings', () => {
  it('warns once per process about an unknown setting, naming it and not its value', async () => {
    const first = await warningsDuring(() => createSegmentClient({ flushAtt: 3 } as never));
    expect(first).to.have.length(1);
    expect(first[0]!.name).to.equal('EventRelayWarning');
    expect((first[0] as Error & { code: string }).code).to.equal('EVENTRELAY_UNKNOWN_OPTION');
    expect(first[0]!.message).to.include('flushAtt').and.include('eventrelay/segment');
    const again = await warningsDuring(() => createSegmentClient({ flushAtt: 4 } as never));
    expect(again).to.have.length(0);
  });

  it('warns about Segment settings it does not honour, with the reason', async () => {
    const seen = await warningsDuring(() => createSegmentClient({ maxTotalBackoffDuration: 60 } as never));
    expect(seen).to.have.length(1);
    expect((seen[0] as Error & { code: string }).code).to.equal('EVENTRELAY_UNSUPPORTED_OPTION');
    expect(seen[0]!.message).to.include('maxTotalBackoffDuration').and.include('maxRetries');
    const others = await warningsDuring(() => createSegmentClient({ oauthSettings: { clientId: 'x' }, maxRateLimitDuration: 60 } as never));
    expect(others.map((w) => w.message).join('\n')).to.include('oauthSettings').and.include('maxRateLimitDuration');
  });

  it('also writes the warning to the DEBUG=analytics log', async () => {
    const lines: string[] = [];
    const previousLog = createDebug.log;
    const previousNamespaces = createDebug.disable();
    createDebug.enable('analytics');
    createDebug.log = (...args: unknown[]) => lines.push(args.map(String).join(' '));
    try {
      await warningsDuring(() => createSegmentClient({ flushAtDebug: 1 } as never));
    } finally {
      createDebug.log = previousLog;
      createDebug.disable();
      if (previousNamespaces) createDebug.enable(previousNamespaces);
    }
    expect(lines.some((line) => line.includes('flushAtDebug'))).to.equal(true);
  });

  it('says nothing about the settings it honours, or unknown ones left undefined', async () => {
    const seen = await warningsDuring(() =>
      createSegmentClient({ host: 'http://127.0.0.1:1', path: '/v1/batch', flushAt: 2, maxRetries: 1, disable: true, somethingElse: undefined } as never),
    );
    expect(seen).to.have.length(0);
  });
});
