import nock from 'nock';

// nock intercepts every request while it is active, and its interceptor changes how real
// sockets behave (no keep-alive reuse, different timing). Real-server tests must see Node's
// own behaviour, so it is off by default; tests that mock HTTP turn it on with `useNock()`.
if (nock.isActive()) nock.restore();
