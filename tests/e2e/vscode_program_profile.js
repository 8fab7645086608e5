#!/usr/bin/env node
// The program's profile (issue 51) as VS Code gets it: `kblaster serve` driven through
// vscode-jsonrpc (the library VS Code's language client is built on) with VS Code's initialize
// params, and the settings the extension itself sends: editors/vscode's daemonSettings() and
// initializationOptions() (compiled to --extension-out) applied to the user settings
//   "kblaster.profile.replay": relu_rowsum's recorded ncu details page,
//   "kblaster.profile.replayTimeline": relu_rowsum's recorded timeline (an H200, issue 51),
// then workspace/didChangeConfiguration with the raw `kblaster` section, as the language client's
// synchronize.configurationSection sends it.
//
//   node tests/e2e/vscode_program_profile.js --binary build/cli/kblaster --extension-out DIR
//        [--timeline FILE.jsonl|''] [--details FILE.csv]
//
// On a copy of tests/fixtures/programs/relu_rowsum/relu_rowsum.cu in a trusted workspace, checks:
// the code lens at line 0 is the program's line ("program: GPU busy ... · 3 kernels"); each
// kernel's first lens is its share ("N% of GPU time · ..."), equal to the share `kblaster profile`
// prints from the same recording; relu_rowsum's share is the largest and relu_rowsum is first in
// the CLI's table; the hover on relu_rowsum says its share ("**In the program:** N% of GPU time").
// With --timeline '' (no timeline) these checks fail. Exits 1 naming each failed check.
'use strict';
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
let rpc;
try {
  rpc = require('vscode-jsonrpc/node');
} catch (e) {
  console.error('vscode_program_profile: the npm package vscode-jsonrpc is missing: run tests/e2e/install-node-deps');
  process.exit(2);
}

const root = path.resolve(__dirname, '..', '..');
const recording = path.join(root, 'tests', 'fixtures', 'programs', 'relu_rowsum');

function parseArgs(argv) {
  const args = { binary: process.env.KBLASTER_BINARY || path.join(root, 'build', 'cli', 'kblaster'), extensionOut: undefined,
                 timeline: path.join(recording, 'relu_rowsum.timeline.jsonl'), details: path.join(recording, 'relu_rowsum.details.csv') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--binary') args.binary = path.resolve(argv[++i]);
    else if (a === '--extension-out') args.extensionOut = path.resolve(argv[++i]);
    else if (a === '--timeline') args.timeline = argv[++i] ? path.resolve(argv[i]) : '';
    else if (a === '--details') args.details = path.resolve(argv[++i]);
    else {
      console.error(`usage: vscode_program_profile.js --binary PATH --extension-out DIR [--timeline FILE|''] [--details FILE]\nunknown argument ${a}`);
      process.exit(2);
    }
  }
  if (!args.extensionOut) {
    console.error('vscode_program_profile: --extension-out DIR (editors/vscode compiled with tsc) is required');
    process.exit(2);
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const timeoutMs = Number(process.env.KBLASTER_E2E_TIMEOUT_MS || 120000);
let failed = 0;
function check(ok, name, seen) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${ok ? '' : `\n     seen: ${seen}`}`);
  if (!ok) failed++;
  return ok;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(what, predicate, ms = timeoutMs) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** The user's settings.json entries under `kblaster.`, read as vscode.WorkspaceConfiguration reads them. */
function reader(values) {
  return { get: (key, fallback) => (key in values ? values[key] : fallback) };
}

/** The raw `kblaster` section VS Code's language client sends: dotted keys nested. */
function nested(values) {
  const out = {};
  for (const [key, value] of Object.entries(values)) {
    const parts = key.split('.');
    let o = out;
    for (const p of parts.slice(0, -1)) o = (o[p] = o[p] || {});
    o[parts[parts.length - 1]] = value;
  }
  return out;
}

/** The shares `kblaster profile` prints from the same recording: {kernel: share %} and the table's order. */
function cliShares() {
  const argv = ['profile', '--ncu-csv', args.details];
  if (args.timeline) argv.push('--timeline', args.timeline);
  const r = spawnSync(args.binary, argv, { encoding: 'utf8' });
  check(r.status === 0, '`kblaster profile --timeline --ncu-csv` on the recording exits 0', `${r.status}: ${r.stderr}`);
  const shares = {}, order = [];
  for (const line of (r.stdout || '').split('\n')) {
    if (line.startsWith('== ')) break;
    const m = /^([A-Za-z_]\w*)\s+\d+\s+.*\s([\d.]+)%\s/.exec(line);
    if (m && m[1] !== 'kernel') { shares[m[1]] = Number(m[2]); order.push(m[1]); }
  }
  return { shares, order };
}

async function main() {
  // The extension's own mapping: what it sends is what is tested.
  const ext = require(path.join(args.extensionOut, 'settings.js'));
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'kblaster-vscode-program-profile-'));
  const file = path.join(workspace, 'relu_rowsum.cu');
  fs.copyFileSync(path.join(recording, 'relu_rowsum.cu'), file);
  const uri = `file://${file}`;
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split('\n');
  console.log(`     replaying ${args.details} with ${args.timeline || 'no timeline'}`);

  // The settings a user without a GPU sets to see a recorded profile (ncu kept out of reach, so
  // that a machine with a GPU replays too).
  const userSettings = { 'analysis.debounceMs': 0, 'ncuPath': '/nonexistent/ncu', 'profile.replay': args.details,
                         'profile.replayTimeline': args.timeline };
  const settings = ext.daemonSettings(reader(userSettings), workspace, os.homedir());
  check(settings.profile && settings.profile.replay === args.details && (settings.profile.replayTimeline || '') === args.timeline,
    'the extension maps kblaster.profile.replay and kblaster.profile.replayTimeline to the daemon\'s profile.*', JSON.stringify(settings));

  const child = spawn(args.binary, ['serve', '--stdio', '--clientProcessId', String(process.pid)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d.toString(); });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code === null ? `signal ${signal}` : code)));
  const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
  const notes = [];
  let refreshes = 0;
  connection.onNotification((method, params) => notes.push({ method, params }));
  connection.onRequest('workspace/codeLens/refresh', () => { refreshes++; return null; });
  connection.onRequest((method, params) => {
    if (method === 'workspace/configuration') return (params.items || []).map((i) => (i.section === 'kblaster' ? nested(userSettings) : null));
    return null;
  });
  connection.listen();
  try {
    const params = JSON.parse(fs.readFileSync(path.join(__dirname, 'vscode_initialize_params.json'), 'utf8'));
    delete params._comment;
    params.processId = process.pid;
    params.rootPath = workspace;
    params.rootUri = `file://${workspace}`;
    params.workspaceFolders = [{ uri: `file://${workspace}`, name: path.basename(workspace) }];
    params.initializationOptions = ext.initializationOptions(settings, true);  // a trusted workspace
    await connection.sendRequest('initialize', params);
    await connection.sendNotification('initialized', {});
    await connection.sendNotification('workspace/didChangeConfiguration', { settings: { kblaster: nested(userSettings) } });
    await connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'cuda-cpp', version: 1, text } });
    const diagnostics = () => notes.filter((n) => n.method === 'textDocument/publishDiagnostics' && n.params.uri === uri);
    await waitFor('diagnostics after didOpen', () => diagnostics().length > 0);

    // The lenses, as VS Code asks for them (again after workspace/codeLens/refresh) until none
    // says the analysis is running.
    let lenses = [];
    for (;;) {
      lenses = (await connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) || [];
      if (!lenses.some((l) => l.command && /analysing/.test(l.command.title))) break;
      const seen = refreshes;
      await waitFor('workspace/codeLens/refresh', () => refreshes > seen);
    }
    for (const l of lenses) console.log(`     lens line ${l.range.start.line + 1}: ${l.command.title} (${l.command.command})`);

    const top = lenses.find((l) => l.range.start.line === 0);
    const topTitle = top && top.command ? top.command.title : '';
    check(lenses[0] === top && /^program: GPU busy [\d.]+ [mu]s, idle [\d.]+ [mu]s · 3 kernels$/.test(topTitle)
      && top.command.command === 'kblaster.profile' && JSON.stringify(top.command.arguments) === JSON.stringify([{ uri }]),
      'the first lens, at line 0, is the program\'s line "program: GPU busy ..., idle ... · 3 kernels" (kblaster.profile on the file)', JSON.stringify(top));

    const { shares: cli, order } = cliShares();
    console.log(`     kblaster profile: ${JSON.stringify(cli)}`);
    check(order[0] === 'relu_rowsum', 'the CLI\'s table puts relu_rowsum first', order.join(', '));
    const shares = {};
    for (const kernel of ['fill', 'relu_rowsum', 'scale_bias']) {
      const line = lines.findIndex((l) => /__global__/.test(l) && l.includes(`${kernel}(`));
      const own = lenses.filter((l) => l.range.start.line === line);
      const title = own.length && own[0].command ? own[0].command.title : '';
      const m = /^(\d+)% of GPU time · /.exec(title);
      shares[kernel] = m ? Number(m[1]) : undefined;
      check(m && cli[kernel] !== undefined && Math.abs(shares[kernel] - cli[kernel]) <= 0.5 && own.length === 3,
        `${kernel}'s first lens is its share, as the CLI has it (${cli[kernel]}%), then its state and Optimize`, JSON.stringify(own.map((l) => l.command.title)));
    }
    const largest = Object.keys(shares).reduce((a, b) => ((shares[b] || 0) > (shares[a] || 0) ? b : a));
    check(largest === 'relu_rowsum' && shares.relu_rowsum !== undefined, 'relu_rowsum\'s share is the largest', JSON.stringify(shares));
    const reluLine = lines.findIndex((l) => /__global__/.test(l) && l.includes('relu_rowsum('));
    const reluLens = lenses.find((l) => l.range.start.line === reluLine);
    check(reluLens && /^\d+% of GPU time · 1 launch · [\d.]+ [mu]s · headroom ~\d/.test(reluLens.command.title),
      'relu_rowsum\'s lens: "N% of GPU time · 1 launch · T us · headroom ~Nx"', JSON.stringify(reluLens));

    // The hover on relu_rowsum's name.
    const hover = await connection.sendRequest('textDocument/hover',
      { textDocument: { uri }, position: { line: reluLine, character: lines[reluLine].indexOf('relu_rowsum(') + 2 } });
    const value = (hover && hover.contents && hover.contents.value) || '';
    const said = (/\*\*In the program:\*\*[^\n]*/.exec(value) || [''])[0];
    console.log(`     hover: ${said}`);
    const hoverShare = /\*\* (\d+)% of GPU time · 1 launch/.exec(said);
    check(hoverShare && Number(hoverShare[1]) === shares.relu_rowsum,
      'the hover on relu_rowsum says its share in the program, as its lens does', value.slice(0, 400));

    await connection.sendRequest('shutdown');
    await connection.sendNotification('exit');
    check((await exited) === 0, 'shutdown + exit -> exit code 0', 'the daemon did not exit 0');
    if (!failed) fs.rmSync(workspace, { recursive: true, force: true });
  } catch (e) {
    check(false, 'session', e.message);
    child.kill('SIGKILL');
  } finally {
    connection.dispose();
    if (failed && stderr) console.log(`--- daemon stderr ---\n${stderr.slice(-3000)}`);
  }
}

main().then(() => {
  console.log(`e2e.vscode_program_profile: ${failed ? `${failed} check(s) failed` : 'all checks passed'}`);
  process.exit(failed ? 1 : 0);
}, (e) => {
  console.error(e);
  process.exit(1);
});
