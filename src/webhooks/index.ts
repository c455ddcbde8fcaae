export {
  EventRelayError,
  SignatureVerificationError,
  WebhookMessageError,
} from '../errors';
