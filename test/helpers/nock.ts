import nock from 'nock';

/** Turns nock on for the enclosing `describe`, with every real connection refused. */
export function useNock(): void {
  before(() => {
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
  });
  afterEach(() => {
    nock.cleanAll();
  });
  after(() => {
    nock.enableNetConnect();
    nock.restore();
  });
}
