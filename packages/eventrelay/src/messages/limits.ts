/** Limits of spec section 8, shared by the client and the forwarder's ingestion API. */

/** Largest serialized message, in UTF-8 bytes (spec section 8: 32 KB per call). */
export const MAX_MESSAGE_BYTES = 32 * 1024;

/** Largest batch request body, in bytes (spec section 8: 500 KB per batch). */
export const MAX_BATCH_BYTES = 500 * 1024;
