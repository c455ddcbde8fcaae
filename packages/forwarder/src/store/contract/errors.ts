import { EventRelayError } from 'eventrelay/internal';

/**
 * `accept` stored nothing: the source its `sourceId` names was deleted (perhaps made again under
 * the name) after the request's write key was checked. The ingestion API answers 401: the key
 * is no longer valid, and sending again cannot help.
 */
export class SourceDeletedError extends EventRelayError {
  constructor(readonly source: string) {
    super(`The source ${JSON.stringify(source)} was deleted while the request was read; nothing was stored`, 'ERR_SOURCE_DELETED');
  }
}
