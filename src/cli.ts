#!/usr/bin/env node
// `verdict`: the command line of src/cli/main.ts, run from the bundle the build makes of it (dist/bundle/, see
// scripts/build.mjs): a start reads a few files instead of some six hundred, so it is ready sooner and holds less.
await import(new URL('../bundle/main.js', import.meta.url).href);
