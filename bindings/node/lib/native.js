'use strict';
// native.js — loads the N-API addon (build/Release/mulligan_node.node, built
// by node-gyp from src/ against libmulligan found with pkg-config) and gives
// it the scratch Float64Array the step functions write their answers into.
// Internal: the public API is index.js.
const path = require('node:path');

const native = require(path.join(__dirname, '..', 'build', 'Release', 'mulligan_node.node'));

/** The step functions' answers (admission, decision, permit), 8 doubles. */
const scratch = new Float64Array(8);
native.setScratch(scratch);

module.exports = { native, scratch };
