export { EventRelayError, ConfigError, DeliveryError } from '../errors';
