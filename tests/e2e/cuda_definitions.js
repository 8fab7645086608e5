// The definitions a CUDA example holds, read from the file itself: the oracle the end-to-end
// tests compare the daemon's symbols and hovers with (the same rules as in nvim_client.lua).
// Deliberately simple: it reads the examples' style (definitions start at column 0 or after a
// `template <...>` line, and end with `}` at column 0), not arbitrary CUDA.
'use strict';

/**
 * @param {string} text the file's contents
 * @returns {{name: string, qualifier: string, line: number, col: number,
 *            templateLine?: number, templateHeader?: string, endLine: number,
 *            signature: string}[]} 0-based lines and UTF-16 columns
 */
function cudaDefinitions(text) {
  const lines = text.split('\n');
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*\/\//.test(line) || /;\s*$/.test(line)) continue;
    let qualifier = (line.match(/^\s*(__global__|__device__)/) || [])[1];
    // A host function: a definition at column 0 that is neither __global__ nor __device__.
    if (!qualifier && (/^extern\s+"C"/.test(line) || /^[A-Za-z_][\w:<>]*[\s*&]+[A-Za-z_]\w*\s*\(/.test(line))) {
      qualifier = 'host';
    }
    const m = /([A-Za-z_]\w*)\s*\(/.exec(line);
    if (!qualifier || !m) continue;
    const def = { name: m[1], qualifier, line: i, col: m.index };
    const header = i > 0 ? lines[i - 1].match(/^\s*(template\s*<.*>)/) : null;
    if (header) {
      def.templateLine = i - 1;
      def.templateHeader = header[1];
    }
    const sig = [];
    let j = i;
    for (; j < lines.length; j++) {
      const brace = lines[j].indexOf('{');
      sig.push(brace >= 0 ? lines[j].slice(0, brace) : lines[j]);
      if (brace >= 0) break;
    }
    def.signature = sig.join(' ').replace(/\s+/g, ' ').trim();
    while (j < lines.length && lines[j] !== '}') j++;
    def.endLine = j;
    found.push(def);
    i = j;
  }
  return found;
}

/** `s` without any whitespace, for comparing code that may be laid out differently. */
function squash(s) {
  return s.replace(/\s+/g, '');
}

module.exports = { cudaDefinitions, squash };
