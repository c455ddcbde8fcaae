// The types of `require('eventrelay/analytics-node')`. Like the classic `analytics-node` 6, it
// returns the class itself, with the named exports (`Analytics`, `default`, `parseDuration`, the
// error classes, ...) as its properties (dist/analytics-node/require.cjs):
//   import Analytics = require('eventrelay/analytics-node');   // or const Analytics = require(...)
//   const analytics = new Analytics('write key', { host: 'https://...' });
import * as classic from '../dist/analytics-node/index.cjs';

declare const Analytics: typeof classic.Analytics & typeof classic;
type Analytics = classic.Analytics;

declare namespace Analytics {
  // The type-only exports of `eventrelay/analytics-node`, and the instance types of its classes.
  export type AnalyticsNodeOptions = classic.AnalyticsNodeOptions;
  export type ClassicCallback = classic.ClassicCallback;
  export type ClassicMessage = classic.ClassicMessage;
  export type FlushData = classic.FlushData;
  export type ErrorCode = classic.ErrorCode;
  export type EventRelayError = classic.EventRelayError;
  export type ConfigError = classic.ConfigError;
  export type ValidationError = classic.ValidationError;
  export type SerializationError = classic.SerializationError;
  export type PayloadTooLargeError = classic.PayloadTooLargeError;
  export type QueueFullError = classic.QueueFullError;
  export type ClientClosedError = classic.ClientClosedError;
  export type CloseTimeoutError = classic.CloseTimeoutError;
  export type HttpError = classic.HttpError;
  export type NetworkError = classic.NetworkError;
  export type TimeoutError = classic.TimeoutError;
  export type SignatureVerificationError = classic.SignatureVerificationError;
  export type WebhookTimestampError = classic.WebhookTimestampError;
  export type WebhookMessageError = classic.WebhookMessageError;
  export type InvalidArgumentError = classic.InvalidArgumentError;
  export type StoreError = classic.StoreError;
  export type NotReplayableError = classic.NotReplayableError;
}

export = Analytics;
