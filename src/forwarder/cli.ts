#!/usr/bin/env node
console.error('eventrelay: the forwarder CLI is not built yet');
process.exitCode = 1;
