/** The package version, sent as `context.library.version`. A unit test keeps it equal to package.json. */
export const VERSION = '0.2.0';

/** The library name, sent as `context.library.name`. */
export const LIBRARY_NAME = 'eventrelay';
