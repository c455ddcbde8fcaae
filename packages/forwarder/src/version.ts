/** The forwarder's package version, printed by `eventrelay --version`. A unit test keeps it equal to package.json. */
export const FORWARDER_VERSION = '0.2.0';
