// Adapter: eventrelay's Analytics from another build, to compare two builds in one run.mjs run:
// BENCH_BASE_DIST names that build's dist/index.js (another worktree, built), e.g.
//   BENCH_BASE_DIST=../main/packages/eventrelay/dist/index.js node bench/run.mjs --clients floor,eventrelay,eventrelay-base
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { creator } from './eventrelay.mjs';

if (process.env.BENCH_BASE_DIST === undefined) throw new Error('eventrelay-base: set BENCH_BASE_DIST to the dist/index.js of the build to compare with');
const { Analytics } = await import(pathToFileURL(resolve(process.env.BENCH_BASE_DIST)).href);

export const label = 'eventrelay, the BENCH_BASE_DIST build';

export const create = creator(Analytics);
