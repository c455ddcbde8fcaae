// The webhook body the hand-written forwarders of bench/forwarder.mjs (the floor and Express +
// BullMQ) make of a client message: a track webhook's fields, the event time defaulting to receipt.
export function webhookBody(m, receivedAt) {
  return {
    version: 1,
    type: m.type,
    userId: m.userId ?? m.anonymousId,
    timestamp: m.timestamp ?? receivedAt,
    event: m.event,
    properties: m.properties,
    context: m.context,
    messageId: m.messageId,
  };
}
