#!/usr/bin/env node
// The `rastro` command. A file of its own outside dist/, so that npm links it on install, before
// a clone's first build has written dist/.
import '../dist/cli/main.js';
