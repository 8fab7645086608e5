// One kblaster.optimize session as VS Code drives it, for tests/e2e/vscode_client.js: the task
// directory, or a plain program (a .cu with main and no task), is copied into a temporary
// workspace (nothing in the checkout is edited), its kernel opened and saved; then diagnostics, hover, code actions, kblaster.optimize with the
// server's progress, workspace/applyEdit applied to the document and sent back as didChange
// (what VS Code does), and the new text checked against the run's best.cu.
//
// Without --live the GPU results are replayed from tests/optimize/recordings/loop-TASK.jsonl
// (recorded on the GPU machine, keyed by each candidate's source hash) and the model is the
// answer book tests/optimize/answer_book.jsonl, replayed by content; the options are those of
// the recording (breadth 2, depth 2, iterations 2, top-k 3, weighted, seed 1, a fresh KB).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');

/** Offset in `text` of an LSP position (UTF-16 code units, as VS Code counts). */
function offsetOf(text, pos) {
  let line = 0, i = 0;
  while (line < pos.line) {
    const nl = text.indexOf('\n', i);
    if (nl < 0) return text.length;
    i = nl + 1;
    line++;
  }
  const end = text.indexOf('\n', i);
  return Math.min(i + pos.character, end < 0 ? text.length : end);
}

/** Applies TextEdits (non-overlapping, any order) to `text`, as a client applies a WorkspaceEdit. */
function applyEdits(text, edits) {
  const sorted = edits.map((e) => ({ start: offsetOf(text, e.range.start), end: offsetOf(text, e.range.end), newText: e.newText }))
    .sort((a, b) => b.start - a.start);
  for (const e of sorted) text = text.slice(0, e.start) + e.newText + text.slice(e.end);
  return text;
}

/** The settings for this run, as editors/vscode's daemonSettings() sends them. */
function settingsFor(workspace, taskName, args, runArgs) {
  const s = {
    knowledgeBase: path.join(workspace, 'kb.sqlite'),
    analysis: { debounceMs: 0 },
    optimize: { breadth: 2, depth: 2, iterations: 2, topK: 3, policy: 'weighted', seed: 1, outputDir: path.join(workspace, 'runs') },
    llm: { replay: process.env.KBLASTER_E2E_ANSWER_BOOK || path.join(root, 'tests', 'optimize', 'answer_book.jsonl') },
  };
  if (args.live) {
    if (process.env.KBLASTER_HARNESS) s.optimize.harness = process.env.KBLASTER_HARNESS;
    if (process.env.KBLASTER_E2E_NCU) s.ncuPath = process.env.KBLASTER_E2E_NCU;
  } else {
    s.optimize.replayHarness = path.join(args.recordingsDir, `loop-${taskName}.jsonl`);
    s.ncuPath = '/nonexistent/ncu';  // no live profiling on save, whatever the machine has
  }
  if (runArgs) s.run = { args: runArgs };
  return s;
}

/**
 * What a session optimizes, copied into `workspace`: a task directory (its kernel file; the
 * result is the run's best.cu), or a plain program {file, runArgs} (no task: its kernel's launch
 * is captured, replayed from tests/optimize/recordings/captures without --live, and the result is
 * the whole program with the rewrite in place, the run's edited FILE.cu).
 */
function targetOf(spec, workspace) {
  if (typeof spec === 'string') {
    const task = JSON.parse(fs.readFileSync(path.join(spec, 'task.json'), 'utf8'));
    const name = task.name || path.basename(spec);
    const dir = path.join(workspace, name);
    fs.cpSync(spec, dir, { recursive: true });
    return { name, file: path.join(dir, task.kernel), result: (report) => path.join(path.dirname(report), 'best.cu') };
  }
  const name = path.basename(spec.file, '.cu');
  const dir = path.join(workspace, name);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, path.basename(spec.file));
  fs.copyFileSync(spec.file, file);
  return { name, file, program: true, runArgs: spec.runArgs, result: (report) => path.join(path.dirname(report), path.basename(file)) };
}

async function optimizeSession(spec, args, h) {
  const { check, record, withTimeout, waitFor, errorOf } = h;
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'kblaster-vscode-optimize-'));
  const target = targetOf(spec, workspace);
  const taskName = target.name;
  const label = `optimize ${taskName}${target.program ? ' (a program, no task)' : ''}`;
  const recordings = path.join(args.recordingsDir, `loop-${taskName}.jsonl`);
  if (!args.live && !fs.existsSync(recordings)) {
    if (process.env.KBLASTER_E2E_ALLOW_MISSING === '1') record('SKIP', label, `no recordings at ${recordings}`);
    else record('FAIL', label, `no recordings at ${recordings}: record them on the GPU machine (tests/optimize/gpu_loop_test.sh)`);
    return;
  }
  const file = target.file;
  const uri = `file://${file}`;
  const original = fs.readFileSync(file, 'utf8');
  const kernel = /__global__\s+[^(]*?([A-Za-z_]\w*)\s*\(/.exec(original)[1];
  const settings = settingsFor(workspace, taskName, args, target.runArgs);
  console.log(`     == ${label}: ${file} (${args.live ? 'LIVE on this GPU' : 'replayed GPU results and model'})`);

  // A program's capture comes from a recording made on the GPU machine: the daemon inherits it.
  const replayCaptures = process.env.KBLASTER_CAPTURE_REPLAY;
  if (target.program && !args.live) process.env.KBLASTER_CAPTURE_REPLAY = path.join(args.recordingsDir, 'captures');
  const d = await h.startDaemon(false);
  if (replayCaptures === undefined) delete process.env.KBLASTER_CAPTURE_REPLAY;
  else process.env.KBLASTER_CAPTURE_REPLAY = replayCaptures;
  const { connection } = d;
  const created = [], progress = [], notes = [], applyRequests = [];
  let text = original, version = 1;
  connection.onRequest('window/workDoneProgress/create', (p) => { created.push(p.token); return null; });
  connection.onRequest('workspace/applyEdit', async (p) => {
    // VS Code applies the edit to the document, then tells the server with didChange.
    applyRequests.push(p);
    const edits = (p.edit.changes || {})[uri] || [];
    const docChanges = (p.edit.documentChanges || []).filter((c) => c.textDocument && c.textDocument.uri === uri);
    const all = edits.concat(...docChanges.map((c) => c.edits));
    if (all.length === 0) return { applied: false, failureReason: 'no edit for the open document' };
    text = applyEdits(text, all);
    await connection.sendNotification('textDocument/didChange',
      { textDocument: { uri, version: ++version }, contentChanges: [{ text }] });
    return { applied: true };
  });
  connection.onRequest((method, params) => {
    if (method === 'workspace/configuration') return (params.items || []).map((i) => (i.section === 'kblaster' ? settings : null));
    return null;
  });
  connection.onUnhandledProgress((p) => progress.push({ token: p.token, value: p.value }));
  connection.onNotification((method, params) => notes.push({ method, params }));
  connection.listen();
  const diagnostics = () => notes.filter((n) => n.method === 'textDocument/publishDiagnostics' && n.params.uri === uri);
  try {
    const params = h.vscodeInitializeParams();
    params.rootPath = workspace;
    params.rootUri = `file://${workspace}`;
    params.workspaceFolders = [{ uri: `file://${workspace}`, name: path.basename(workspace) }];
    // As the extension sends them in a trusted workspace: Optimize runs the workspace's code.
    params.initializationOptions = { ...settings, workspaceTrusted: true };
    await withTimeout(connection.sendRequest('initialize', params), 'initialize');
    await connection.sendNotification('initialized', {});
    await connection.sendNotification('workspace/didChangeConfiguration', { settings: { kblaster: settings } });
    await connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'cuda-cpp', version, text } });
    await waitFor('diagnostics after didOpen', () => diagnostics().length > 0, 180000);
    const beforeSave = diagnostics().length;
    await connection.sendNotification('textDocument/didSave', { textDocument: { uri } });
    await waitFor('diagnostics after didSave', () => diagnostics().length > beforeSave, 180000);
    const saved = diagnostics()[diagnostics().length - 1].params.diagnostics;
    check(saved.every((x) => x.severity !== 1), `${label}: saved kernel compiles without errors`, JSON.stringify(saved));

    const lines = original.split('\n');
    const line = lines.findIndex((l) => /__global__/.test(l) && l.includes(`${kernel}(`));
    const col = lines[line].indexOf(`${kernel}(`);
    const hover = await withTimeout(connection.sendRequest('textDocument/hover',
      { textDocument: { uri }, position: { line, character: col + 1 } }), 'hover');
    const value = (hover && hover.contents && hover.contents.value) || '';
    check(/\*\*Performance\*\*/.test(value) && /State: `/.test(value), `${label}: hover on ${kernel} shows its performance state`,
      value.slice(0, 300));
    const actions = await withTimeout(connection.sendRequest('textDocument/codeAction', {
      textDocument: { uri }, range: { start: { line, character: col }, end: { line, character: col } },
      context: { diagnostics: [], triggerKind: 1 },
    }), 'codeAction') || [];
    console.log(`     actions: ${actions.map((a) => a.title + (a.disabled ? ' (disabled)' : '')).join('; ')}`);
    const optimize = actions.find((a) => a.title === `Optimize ${kernel}`);
    check(optimize && !optimize.disabled && optimize.command.command === 'kblaster.optimize',
      `${label}: an enabled "Optimize ${kernel}" code action`, JSON.stringify(actions).slice(0, 400));

    // Run the action's own command, as VS Code does when it is picked.
    const command = optimize ? optimize.command : { command: 'kblaster.optimize', arguments: [{ uri, kernel }] };
    const createdBefore = created.length;
    const started = Date.now();
    const ms = Number(process.env.KBLASTER_E2E_OPTIMIZE_TIMEOUT_MS || (args.live ? 1200000 : 300000));
    const outcome = await withTimeout((async () => {
      try {
        return { result: await connection.sendRequest('workspace/executeCommand', { command: command.command, arguments: command.arguments }) };
      } catch (e) {
        return { error: { code: e.code, message: e.message } };
      }
    })(), 'kblaster.optimize', ms);
    const seconds = (Date.now() - started) / 1000;
    if (!check(!outcome.error, `${label}: kblaster.optimize answers`, JSON.stringify(outcome.error))) {
      d.child.kill('SIGKILL');
      return;
    }
    const r = outcome.result;
    console.log(`     optimize after ${seconds.toFixed(1)} s: ${JSON.stringify(r)}`);
    check(r.replayed === !args.live && r.stopReason === 'finished' && r.candidates > 0,
      `${label}: ${args.live ? 'live' : 'replayed'} run finished with candidates`, JSON.stringify(r));

    const token = created[createdBefore];
    const values = progress.filter((p) => p.token === token).map((p) => p.value);
    check(created.length > createdBefore && values.length >= 3 && values[0].kind === 'begin' && values[0].title.includes(kernel)
      && values.slice(1, -1).every((v) => v.kind === 'report') && values.length > 2 && values[values.length - 1].kind === 'end',
      `${label}: progress through window/workDoneProgress/create: begin, reports, end`,
      values.map((v) => v.kind).join(' ') || 'no $/progress');

    if (target.program) {
      const said = values.map((v) => v.message || '').join('\n');
      check(said.includes(`captured launch 0 of ${path.basename(file)} ${target.runArgs.join(' ')}`)
        && (args.live || said.includes('replayed from a recording')),
      `${label}: the progress says which launch was captured${args.live ? '' : ', and that the capture was replayed'}`,
      said.slice(0, 600));
    }
    const best = fs.readFileSync(target.result(r.reportPath), 'utf8');
    if (target.program && r.bestSpeedup > 1) {
      check(text.includes('int main(') && !text.includes('kb_forward'),
        `${label}: the edit is the whole program (main kept, no launcher)`, text.slice(-300));
    }
    if (r.bestSpeedup > 1) {
      check(applyRequests.length === 1 && r.applied === true, `${label}: ${r.bestSpeedup.toFixed(2)}x: one workspace/applyEdit, applied`,
        `${applyRequests.length} requests, applied ${r.applied}`);
      check(text === best && text !== original, `${label}: the document now holds the run's ${path.basename(target.result(r.reportPath))}`,
        `document ${text.length} chars, best.cu ${best.length}, original ${original.length}`);
    } else {
      check(applyRequests.length === 0 && text === original, `${label}: nothing faster: the document is unchanged`,
        `${applyRequests.length} applyEdit requests`);
    }
    await waitFor('the final diagnostic', () => diagnostics().some((n) => n.params.diagnostics.some((x) => /optimized /.test(x.message))), 5000)
      .catch(() => {});
    const final = diagnostics().map((n) => n.params.diagnostics).flat().filter((x) => /optimized /.test(x.message)).pop();
    console.log(`     diagnostic: ${final ? final.message : 'none'}`);
    check(final && final.message.includes(`optimized ${kernel}`) && final.message.includes(r.reportPath)
      && (args.live || final.message.startsWith('[REPLAYED]'))
      && (!target.program || r.bestSpeedup <= 1 || final.message.includes('the same outputs')),
      `${label}: a diagnostic names the speedup and the report${target.program ? ', and the re-capture that checked the program' : ''}`,
      JSON.stringify(final));

    // The document as edited is what the daemon now holds: a symbol request sees the new text.
    const symbols = await withTimeout(connection.sendRequest('textDocument/documentSymbol', { textDocument: { uri } }), 'symbols') || [];
    check(symbols.some((s) => s.name === kernel), `${label}: the daemon holds the edited document (${kernel} still there)`,
      JSON.stringify(symbols.map((s) => s.name)));
    const bad = await withTimeout(errorOf(connection.sendRequest('workspace/executeCommand',
      { command: 'kblaster.optimize', arguments: [{ uri: `file://${workspace}/nope.cu`, kernel }] })), 'optimize on a closed file');
    check(bad && bad.code === -32602 && /not open/.test(bad.message), `${label}: optimize on a file that is not open -> -32602`,
      JSON.stringify(bad));

    if (target.program && r.applied) {
      // The applied edit is not saved yet: a program is built from the file on disk, so Optimize
      // is refused (typed: not_saved, for the client's [Save and Retry]) instead of capturing
      // what the user does not see.
      const unsaved = await withTimeout(errorOf(connection.sendRequest('workspace/executeCommand',
        { command: 'kblaster.optimize', arguments: [{ uri, kernel }] })), 'optimize on the unsaved edit');
      check(unsaved && unsaved.code === -32803 && unsaved.data && unsaved.data.refusal === 'not_saved'
        && unsaved.message.startsWith(`Save ${path.basename(file)} first`),
        `${label}: Optimize on the unsaved edit -> a not_saved refusal asking to save first`, JSON.stringify(unsaved));
    } else if (!args.live) {
      // Recordings that are not there: a clear error naming the file, not a crash.
      const missing = path.join(workspace, 'no-such-recordings.jsonl');
      await connection.sendNotification('workspace/didChangeConfiguration',
        { settings: { kblaster: { ...settings, optimize: { ...settings.optimize, replayHarness: missing } } } });
      const noRec = await withTimeout(errorOf(connection.sendRequest('workspace/executeCommand',
        { command: 'kblaster.optimize', arguments: [{ uri, kernel }] })), 'optimize with missing recordings');
      check(noRec && noRec.code === -32602 && noRec.message.includes(missing),
        `${label}: missing recordings -> -32602 naming the file`, JSON.stringify(noRec));
    }
    await withTimeout(connection.sendRequest('shutdown'), 'shutdown');
    await connection.sendNotification('exit');
    const code = await withTimeout(d.exited, 'the daemon to exit');
    check(code === 0, `${label}: shutdown + exit -> exit code 0`, `exit ${code}`);
    if (!process.env.KBLASTER_E2E_KEEP) fs.rmSync(workspace, { recursive: true, force: true });
  } catch (e) {
    record('FAIL', label, e.message);
    d.child.kill('SIGKILL');
  } finally {
    connection.dispose();
    if (d.stderr() && process.env.KBLASTER_E2E_VERBOSE) console.log(`--- daemon stderr ---\n${d.stderr().slice(-4000)}`);
  }
}

module.exports = { optimizeSession, applyEdits };
