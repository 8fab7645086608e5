#!/usr/bin/env node
// The program's profile (issue 51) in a real VS Code (code-server, from tests/e2e/vscode_ui/install)
// in a real browser (Debian's Chromium, headless, through playwright-core), with the extension's
// .vsix installed: relu_rowsum's H200 recording replayed through the extension's settings
//   "kblaster.profile.replay": tests/fixtures/programs/relu_rowsum/relu_rowsum.details.csv,
//   "kblaster.profile.replayTimeline": tests/fixtures/programs/relu_rowsum/relu_rowsum.timeline.jsonl
// in the folder's .vscode/settings.json, on a copy of relu_rowsum.cu (workspace trust off: a
// trusted folder). Checked through the workbench's DOM, as a user sees it, and photographed:
//   p1 the code lenses: above line 1 the program's line "program: GPU busy ... · 3 kernels"; above
//      relu_rowsum its share "N% of GPU time · 1 launch · ... · headroom ~Nx", the largest of the
//      three kernels' shares;
//   p2 the mouse hover on relu_rowsum's name: "In the program: N% of GPU time ...".
//
//   node tests/e2e/vscode_ui/program_profile_ui.js --binary build/cli/kblaster
//        --vsix build/tests/e2e/kblaster.vsix [--out DIR] [--timeline FILE|''] [--keep]
//
// The screenshots go to --out (p1-program-lenses.png, p2-program-hover.png), with the daemon's
// and code-server's logs. --timeline '' replays no timeline: the checks then fail. Exits 1
// naming the failed check and what it saw.
'use strict';
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const here = __dirname;
const root = path.resolve(here, '..', '..', '..');
const codeServer = path.join(here, 'node_modules', '.bin', 'code-server');
const chromiumPath = process.env.KBLASTER_E2E_CHROMIUM || '/usr/bin/chromium';
const recording = path.join(root, 'tests', 'fixtures', 'programs', 'relu_rowsum');

function parseArgs(argv) {
  const args = { binary: path.join(root, 'build', 'cli', 'kblaster'), vsix: path.join(root, 'build', 'tests', 'e2e', 'kblaster.vsix'),
                 out: path.join(root, 'build', 'tests', 'e2e', 'vscode-ui-program-profile'),
                 timeline: path.join(recording, 'relu_rowsum.timeline.jsonl'), details: path.join(recording, 'relu_rowsum.details.csv'),
                 keep: process.env.KBLASTER_E2E_KEEP === '1' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--binary') args.binary = path.resolve(argv[++i]);
    else if (a === '--vsix') args.vsix = path.resolve(argv[++i]);
    else if (a === '--out') args.out = path.resolve(argv[++i]);
    else if (a === '--timeline') args.timeline = argv[++i] ? path.resolve(argv[i]) : '';
    else if (a === '--keep') args.keep = true;
    else {
      console.error(`usage: program_profile_ui.js --binary KBLASTER --vsix FILE.vsix [--out DIR] [--timeline FILE|''] [--keep]\nunknown argument ${a}`);
      process.exit(2);
    }
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
const started = Date.now();
const log = (line) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
class CheckFailed extends Error {}
function check(ok, name, seen) {
  if (!ok) throw new CheckFailed(`FAIL ${name}\n     seen: ${seen}`);
  log(`PASS ${name}`);
}
/** Polls fn until it returns a truthy value; throws CheckFailed naming `what` and what was last seen. */
async function waitFor(what, fn, ms, describe) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new CheckFailed(`FAIL ${what} within ${ms / 1000} s\n     seen: ${describe ? await describe() : '?'}`);
    await sleep(100);
  }
}

function requireInstalled() {
  const missing = [];
  if (!fs.existsSync(codeServer)) missing.push('code-server');
  if (!fs.existsSync(path.join(here, 'node_modules', 'playwright-core'))) missing.push('playwright-core');
  if (!fs.existsSync(chromiumPath)) missing.push(chromiumPath);
  if (!fs.existsSync(args.vsix)) missing.push(`${args.vsix} (ctest e2e.vscode_vsix makes it)`);
  if (missing.length) {
    console.error(`program_profile_ui: missing ${missing.join(', ')}: run tests/e2e/vscode_ui/install (scripts/test does)`);
    process.exit(1);
  }
  return require(path.join(here, 'node_modules', 'playwright-core'));
}

function writeJson(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** Starts code-server on 127.0.0.1 and a port the system picks (it prints the one it got). */
async function startCodeServer(dirs, env) {
  const argv = ['--bind-addr', '127.0.0.1:0', '--auth', 'none', '--disable-telemetry', '--disable-update-check',
    '--disable-getting-started-override', '--ignore-last-opened', '--config', path.join(dirs.tmp, 'code-server.yaml'),
    '--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions, dirs.workspace];
  const child = spawn(codeServer, argv, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const logFile = fs.createWriteStream(path.join(args.out, 'code-server.log'));
  let text = '';
  const port = await Promise.race([new Promise((resolve, reject) => {
    const onData = (d) => {
      logFile.write(d);
      text += d;
      const m = /HTTP server listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (m) resolve(Number(m[1]));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code, signal) => reject(new Error(`code-server exited (${code ?? signal}) before listening:\n${text.slice(-2000)}`)));
  }), sleep(60000).then(() => { throw new Error(`code-server did not listen within 60 s:\n${text}`); })]);
  return { child, port };
}

/** Kills code-server's whole process group (extension host, the daemon), TERM then KILL. */
async function stopProcessGroup(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const kill = (sig) => { try { process.kill(-child.pid, sig); } catch (e) { /* gone */ } };
  kill('SIGTERM');
  for (let i = 0; i < 20 && child.exitCode === null && child.signalCode === null; i++) await sleep(100);
  kill('SIGKILL');
}

const editorSel = '.editor-group-container.active .monaco-editor';

/** The code lens lines on screen, top to bottom: {top, texts} (each lens's title). */
async function lensLines(page) {
  return page.$$eval(`${editorSel} .codelens-decoration`, (els) => els.map((e) => ({
    top: e.getBoundingClientRect().top,
    texts: Array.from(e.querySelectorAll('a, span')).filter((x) => x.children.length === 0).map((x) => x.textContent.trim())
      .filter((t) => t && t !== '|'),
  })).sort((a, b) => a.top - b.top));
}

/** The screen box of `word` on 1-based `line` of the active editor (a rendered token). */
async function wordBox(page, line, word) {
  return page.evaluate(({ sel, line, word }) => {
    const editor = document.querySelector(sel);
    const number = Array.from(editor.querySelectorAll('.margin-view-overlays .line-numbers')).find((e) => e.textContent.trim() === String(line));
    if (!number) return null;
    const top = number.getBoundingClientRect().top;
    const viewLine = Array.from(editor.querySelectorAll('.view-lines .view-line')).find((e) => Math.abs(e.getBoundingClientRect().top - top) < 2);
    const span = viewLine && Array.from(viewLine.querySelectorAll('span > span')).find((s) => s.textContent === word);
    if (!span) return null;
    const r = span.getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2, top: r.top };
  }, { sel: editorSel, line, word });
}

async function main() {
  const playwright = requireInstalled();
  fs.mkdirSync(args.out, { recursive: true });
  for (const f of fs.readdirSync(args.out)) if (/\.(png|log)$/.test(f)) fs.rmSync(path.join(args.out, f));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kblaster-vscode-program-profile-'));
  const dirs = { tmp, userData: path.join(tmp, 'user-data'), extensions: path.join(tmp, 'extensions'), chrome: path.join(tmp, 'chromium'),
                 workspace: path.join(tmp, 'workspace'), state: path.join(tmp, 'state') };
  fs.mkdirSync(dirs.workspace, { recursive: true });
  const file = path.join(dirs.workspace, 'relu_rowsum.cu');
  fs.copyFileSync(path.join(recording, 'relu_rowsum.cu'), file);
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const kernelLine = (name) => lines.findIndex((l) => /__global__/.test(l) && l.includes(`${name}(`)) + 1;
  // The folder's settings: the recording to replay (what a user without a GPU sets).
  writeJson(path.join(dirs.workspace, '.vscode', 'settings.json'), {
    'kblaster.analysis.debounceMs': 0,
    'kblaster.profile.replay': args.details,
    'kblaster.profile.replayTimeline': args.timeline,
  });
  // The user's: the daemon, no live ncu, a trusted folder, nothing that opens by itself.
  writeJson(path.join(dirs.userData, 'User', 'settings.json'), {
    'kblaster.path': args.binary,
    'kblaster.ncuPath': '/nonexistent/ncu',
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true,
    'git.enabled': false,
    'chat.commandCenter.enabled': false,
    'editor.minimap.enabled': false,
    'editor.hover.delay': 200,
    'editor.codeLens': true,
  });
  const env = { ...process.env, XDG_CONFIG_HOME: path.join(tmp, 'config'), XDG_DATA_HOME: path.join(tmp, 'data'),
                XDG_STATE_HOME: dirs.state, XDG_CACHE_HOME: path.join(tmp, 'cache') };
  delete env.VSCODE_IPC_HOOK_CLI;
  log(`replaying ${args.details} with ${args.timeline || 'no timeline'}; screenshots go to ${args.out}`);

  let server, context, page;
  try {
    const r = spawnSync(codeServer, ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions, '--install-extension', args.vsix],
      { env, encoding: 'utf8', timeout: 120000 });
    check(r.status === 0 && fs.readdirSync(dirs.extensions).some((d) => d.startsWith('kernelblaster.kblaster-')),
      `code-server --install-extension ${path.basename(args.vsix)}`, `${r.status}: ${r.stdout}${r.stderr}`);
    server = await startCodeServer(dirs, env);
    const origin = `http://127.0.0.1:${server.port}`;
    context = await playwright.chromium.launchPersistentContext(dirs.chrome, {
      executablePath: chromiumPath, headless: true, env, timeout: 60000, viewport: { width: 1400, height: 1000 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
    page = context.pages()[0] || await context.newPage();
    await page.goto(`${origin}/?folder=${encodeURIComponent(dirs.workspace)}`, { timeout: 60000 });
    await page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 90000 });
    log(`workbench up at ${origin}`);
    // Open the program as a user does: Quick Open.
    await page.keyboard.press('Control+p');
    const quick = page.locator('.quick-input-widget input');
    await quick.waitFor({ state: 'visible', timeout: 15000 });
    await quick.fill('relu_rowsum.cu');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'relu_rowsum.cu' }).first().waitFor({ timeout: 15000 });
    await page.keyboard.press('Enter');
    await page.waitForSelector(`${editorSel} .view-lines`, { timeout: 15000 });

    // -- p1: the lenses, once the replayed profile is in them (the program's line on top) and no
    // kernel's says "analysing…".
    const lensNow = async () => JSON.stringify(await lensLines(page).catch(() => []));
    const shown = await waitFor('the program\'s line among the code lenses', async () => {
      const l = await lensLines(page);
      return l.some((x) => x.texts.some((t) => /^program: /.test(t))) && l.length >= 4
        && !l.some((x) => x.texts.some((t) => /^analysing/.test(t))) ? l : null;
    }, 120000, lensNow);
    for (const l of shown) log(`lens line: ${l.texts.join(' | ')}`);
    const top = shown[0].texts[0] || '';
    check(/^program: GPU busy [\d.]+ [mu]s, idle [\d.]+ [mu]s · 3 kernels$/.test(top),
      'the first lens line, above line 1, is the program\'s "program: GPU busy ..., idle ... · 3 kernels"', JSON.stringify(shown[0]));
    const shares = {};
    let reluLens = [];
    for (const name of ['fill', 'relu_rowsum', 'scale_bias']) {
      const box = await waitFor(`${name} rendered`, () => wordBox(page, kernelLine(name), name), 10000, lensNow);
      // The lens line right above the kernel's line.
      const above = shown.filter((l) => l.top < box.top).pop();
      const m = above && /^(\d+)% of GPU time · /.exec(above.texts[0] || '');
      shares[name] = m ? Number(m[1]) : undefined;
      if (name === 'relu_rowsum') reluLens = above ? above.texts : [];
    }
    check(/^\d+% of GPU time · 1 launch · [\d.]+ [mu]s · headroom ~\d/.test(reluLens[0] || ''),
      'above relu_rowsum, first, its share: "N% of GPU time · 1 launch · T us · headroom ~Nx"', JSON.stringify(reluLens));
    check(Object.values(shares).every((s) => s !== undefined) && Object.keys(shares).every((k) => shares[k] <= shares.relu_rowsum),
      'each kernel shows its share, relu_rowsum\'s the largest', JSON.stringify(shares));
    await page.screenshot({ path: path.join(args.out, 'p1-program-lenses.png') });
    log(`screenshot ${path.join(args.out, 'p1-program-lenses.png')}: ${top} / ${reluLens.join(' | ')}`);

    // -- p2: the mouse on relu_rowsum's name: the hover says its share in the program.
    const box = await wordBox(page, kernelLine('relu_rowsum'), 'relu_rowsum');
    await page.mouse.move(box.x, box.y);
    const hover = await waitFor('the hover on relu_rowsum saying "In the program"', async () => {
      const t = await page.$$eval('.monaco-hover', (els) => els.map((e) => e.innerText).join('\n'));
      return /In the program:/.test(t) ? t : null;
    }, 30000, async () => JSON.stringify(await page.$$eval('.monaco-hover', (els) => els.map((e) => e.innerText)).catch(() => [])));
    const said = (/In the program:[^\n]*/.exec(hover) || [''])[0];
    check(new RegExp(`^In the program: ${shares.relu_rowsum}% of GPU time · 1 launch`).test(said),
      'the hover on relu_rowsum says its share in the program, as its lens does', said);
    // The hover opens with the kernel's diagnostics on top: its own part, scrolled into view and
    // faded in, is what the photograph shows.
    await page.evaluate(() => {
      const all = Array.from(document.querySelectorAll('.monaco-hover *')).filter((e) => /In the program:/.test(e.textContent));
      const innermost = all.filter((e) => !all.some((o) => o !== e && e.contains(o)));
      if (innermost[0]) innermost[0].scrollIntoView({ block: 'start' });
    });
    await sleep(500);
    await page.screenshot({ path: path.join(args.out, 'p2-program-hover.png') });
    log(`screenshot ${path.join(args.out, 'p2-program-hover.png')}: ${said}`);
    log('all checks passed');
    return 0;
  } catch (e) {
    console.log(e instanceof CheckFailed ? e.message : `FAIL ${e.stack || e.message}`);
    if (page) await page.screenshot({ path: path.join(args.out, 'failure.png') }).then(() => console.log(`screenshot: ${path.join(args.out, 'failure.png')}`)).catch(() => {});
    return 1;
  } finally {
    const daemonLog = path.join(dirs.state, 'kblaster', 'kblaster.log');
    if (fs.existsSync(daemonLog)) fs.copyFileSync(daemonLog, path.join(args.out, 'daemon.log'));
    if (context) await Promise.race([context.close().catch(() => {}), sleep(10000)]);
    if (server) await stopProcessGroup(server.child);
    if (args.keep) console.log(`kept ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then((code) => process.exit(code), (e) => { console.error(e); process.exit(1); });
