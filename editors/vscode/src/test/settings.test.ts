// Unit tests of the extension's settings mapping and status text (node --test, no VS Code).
import { strict as assert } from 'assert';
import { readFileSync } from 'fs';
import { test } from 'node:test';
import { ConfigReader, daemonSettings, expandPath, initializationOptions, settingIds, settingsOpener, statusText } from '../settings';

function reader(values: Record<string, unknown>): ConfigReader {
  return { get: <T>(key: string, fallback: T) => (key in values ? (values[key] as T) : fallback) };
}

test('defaults send only what the daemon cannot assume', () => {
  assert.deepEqual(daemonSettings(reader({})), {
    logLevel: 'info',
    profileOnSave: true,
    analysis: { enabled: true },
  });
});

test('settings map to the daemon keys, nested by section', () => {
  const s = daemonSettings(reader({
    'logLevel': 'debug', 'arch': ' sm_90 ', 'profileOnSave': false, 'knowledgeBase': '${workspaceFolder}/kb.sqlite',
    'optimize.breadth': 4, 'optimize.depth': 2, 'optimize.budgetTokens': 100000, 'optimize.replayHarness': '~/rec.jsonl',
    'llm.model': 'qwen', 'llm.apiKeyEnv': 'MY_KEY', 'llm.replay': 'cassette.jsonl', 'ncuPath': '/opt/ncu',
  }), '/ws', '/home/u');
  assert.deepEqual(s, {
    logLevel: 'debug', arch: 'sm_90', profileOnSave: false, knowledgeBase: '/ws/kb.sqlite', ncuPath: '/opt/ncu',
    analysis: { enabled: true },
    optimize: { breadth: 4, depth: 2, budgetTokens: 100000, replayHarness: '/home/u/rec.jsonl' },
    llm: { model: 'qwen', apiKeyEnv: 'MY_KEY', replay: 'cassette.jsonl' },
  });
});

test('a recorded profile and its program timeline reach the daemon as profile.*', () => {
  const s = daemonSettings(reader({ 'profile.replay': '${workspaceFolder}/rec/app.details.csv', 'profile.replayTimeline': '~/app.timeline.jsonl' }),
                           '/ws', '/home/u');
  assert.deepEqual(s.profile, { replay: '/ws/rec/app.details.csv', replayTimeline: '/home/u/app.timeline.jsonl' });
  assert.equal(daemonSettings(reader({ 'profile.replay': '' })).profile as unknown, undefined);
});

test('how the program runs reaches the daemon as run.*, malformed values left out', () => {
  const s = daemonSettings(reader({
    'run.args': ['1000', '1000', '3'], 'run.cwd': '${workspaceFolder}/data', 'run.env': { OMP_NUM_THREADS: '4' },
    'run.launch': 2, 'run.timeoutSeconds': 30, 'run.command': ['./build/app', '--fast'], 'run.build': ['make', 'app'],
    'run.shapes': [['333', '77'], ['64', '4096']],
  }), '/ws', '/home/u');
  assert.deepEqual(s.run, { args: ['1000', '1000', '3'], cwd: '/ws/data', env: { OMP_NUM_THREADS: '4' }, launch: 2, timeoutSeconds: 30,
                            command: ['./build/app', '--fast'], build: ['make', 'app'], shapes: [['333', '77'], ['64', '4096']] });
  const bad = daemonSettings(reader({ 'run.args': [1, 2], 'run.env': { N: 3 }, 'run.launch': -1, 'run.timeoutSeconds': 0.5,
                                      'run.command': 'make', 'run.build': [true], 'run.shapes': ['333 77'] }));
  assert.equal(bad.run as unknown, undefined);
});

test('the optimizer settings that make a run reproducible reach the daemon', () => {
  const s = daemonSettings(reader({
    'optimize.seed': 7, 'optimize.topK': 2, 'optimize.policy': 'greedy', 'optimize.harness': '~/bin/kblaster-harness',
  }), '/ws', '/home/u');
  assert.deepEqual(s.optimize, { topK: 2, policy: 'greedy', seed: 7, harness: '/home/u/bin/kblaster-harness' });
  const bad = daemonSettings(reader({ 'optimize.seed': 1.5, 'optimize.policy': 'random', 'optimize.topK': 0 }));
  assert.equal((bad.optimize as unknown), undefined);
  assert.equal(daemonSettings(reader({ 'optimize.seed': 0 })).optimize !== undefined, true);
});

test('out-of-range and mistyped numbers are left to the daemon default', () => {
  const s = daemonSettings(reader({ 'optimize.breadth': 0, 'optimize.depth': 'deep', 'analysis.debounceMs': 20000 }));
  assert.equal((s.optimize as unknown), undefined);
  assert.deepEqual(s.analysis, { enabled: true });
});

test('paths expand ${workspaceFolder} and ~ only where they can', () => {
  assert.equal(expandPath('${workspaceFolder}/a', undefined, '/h'), '${workspaceFolder}/a');
  assert.equal(expandPath(' ~/x ', '/w', '/h'), '/h/x');
  assert.equal(expandPath('a~/x', '/w', '/h'), 'a~/x');
});

test('status text follows the daemon and the job', () => {
  assert.match(statusText({ daemon: 'stopped' }).text, /error/);
  assert.match(statusText({ daemon: 'running' }).tooltip, /ready/);
  const job = statusText({ daemon: 'running', job: { title: 'optimizing k', percentage: 41.6, message: 'step 3' } });
  assert.equal(job.text, '$(sync~spin) KernelBlaster 42%');
  assert.equal(job.tooltip, 'KernelBlaster: optimizing k: step 3');
  assert.equal(statusText({ daemon: 'running', job: { title: 't', percentage: 140 } }).text, '$(sync~spin) KernelBlaster 100%');
});

test('trust and the editor travel beside the settings, never as one', () => {
  const settings = daemonSettings(reader({ 'workspaceTrusted': true, 'editor': 'neovim' }));
  assert.equal('workspaceTrusted' in settings, false);
  assert.equal('editor' in settings, false);
  assert.deepEqual(initializationOptions(settings, false), { ...settings, workspaceTrusted: false, editor: 'vscode' });
  assert.equal(initializationOptions(settings, true).workspaceTrusted, true);
});

test('an untrusted workspace shows in the status bar', () => {
  const untrusted = statusText({ daemon: 'running', trusted: false });
  assert.match(untrusted.text, /shield/);
  assert.match(untrusted.tooltip, /compile-only.*Manage Workspace Trust/);
  assert.match(statusText({ daemon: 'running', trusted: true }).tooltip, /ready$/);
});

test('the machine shows in the status bar: no GPU in the text, each missing tool in the tooltip', () => {
  const none = statusText({ daemon: 'running', trusted: true, machine: { nvcc: '/usr/local/cuda/bin/nvcc', gpu: null, ncu: null } });
  assert.equal(none.text, '$(zap) KernelBlaster: no GPU');
  assert.match(none.tooltip, /^KernelBlaster: ready\nGPU: none on this machine: .*needs a GPU or recorded results/);
  assert.match(none.tooltip, /Nsight Compute \(ncu\): not found/);
  assert.match(none.tooltip, /nvcc: \/usr\/local\/cuda\/bin\/nvcc$/);
  const replayed = statusText({ daemon: 'running', machine: { nvcc: null, gpu: null, ncu: null, replayedGpu: true } });
  assert.match(replayed.tooltip, /replays recorded GPU results/);
  assert.match(replayed.tooltip, /nvcc: not found/);
  const gpu = statusText({ daemon: 'running', machine: { nvcc: '/n', gpu: 'sm_90', ncu: '/ncu' } });
  assert.equal(gpu.text, '$(zap) KernelBlaster');
  assert.match(gpu.tooltip, /GPU: sm_90\nNsight Compute: \/ncu/);
  assert.match(statusText({ daemon: 'running', trusted: false, machine: { nvcc: '/n', gpu: null, ncu: null } }).tooltip,
               /Restricted Mode.*\nGPU: none/);
});

test('a daemon that did not start says why in the status bar', () => {
  const s = statusText({ daemon: 'stopped', failure: 'the daemon did not start: /bin/false ended before answering' });
  assert.match(s.text, /error/);
  assert.equal(s.tooltip, 'KernelBlaster: the daemon did not start: /bin/false ended before answering (click: choose the kblaster executable, or restart)');
});

test('a settings button opens every setting of its group, on the tab where it can be changed', () => {
  // Run from editors/vscode (npm test, ctest e2e.vscode_extension_unit).
  const manifest = JSON.parse(readFileSync('package.json', 'utf8'));
  const properties = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;
  const scopes = Object.fromEntries(Object.entries(properties).map(([id, p]) => [id, p.scope]));
  const llm = settingIds(properties, 'kblaster.llm.');
  assert.deepEqual([...llm].sort(), Object.keys(properties).filter((k) => k.startsWith('kblaster.llm.')).sort());
  assert.equal(llm.length, 8, llm.join(', '));
  assert.deepEqual(settingIds(properties, 'kblaster.ncuPath'), ['kblaster.ncuPath']);
  // Local: the User tab, every id listed (a words query found 6 of the 8).
  const local = settingsOpener(llm, scopes, false);
  assert.equal(local.command, 'workbench.action.openSettings');
  assert.equal(local.argument, llm.map((id) => `@id:${id}`).join(' '));
  // Remote (code-server, Remote-SSH): machine-scoped settings are not on the User tab.
  assert.deepEqual(settingsOpener(['kblaster.optimize.replayHarness'], scopes, true),
                   { command: 'workbench.action.openRemoteSettings', argument: { query: '@id:kblaster.optimize.replayHarness' } });
  assert.equal(settingsOpener(llm, scopes, true).command, 'workbench.action.openRemoteSettings');
  assert.equal(settingsOpener(['kblaster.ncuPath'], scopes, true).command, 'workbench.action.openRemoteSettings');
  assert.equal(settingsOpener(['kblaster.optimize.breadth'], scopes, true).command, 'workbench.action.openSettings');
});

test('the manifest declares limited support for untrusted workspaces, restricting what runs', () => {
  // Run from editors/vscode (npm test, ctest e2e.vscode_extension_unit).
  const manifest = JSON.parse(readFileSync('package.json', 'utf8'));
  const untrusted = manifest.capabilities?.untrustedWorkspaces;
  assert.equal(untrusted?.supported, 'limited');
  assert.match(untrusted?.description ?? '', /trust/i);
  for (const key of ['kblaster.path', 'kblaster.arguments', 'kblaster.ncuPath', 'kblaster.optimize.harness', 'kblaster.run.command',
                   'kblaster.run.build']) {
    assert.ok(untrusted.restrictedConfigurations.includes(key), `${key} is not restricted`);
  }
});
