import nock from 'nock';

// Tests talk to 127.0.0.1 only; anything else is a bug in the test.
nock.disableNetConnect();
nock.enableNetConnect((host) => host.startsWith('127.0.0.1') || host.startsWith('localhost') || host.startsWith('[::1]'));
