// The extension's own logic that needs no VS Code: settings -> the daemon's settings object
// (initializationOptions and workspace/didChangeConfiguration), and the status-bar text.
// Kept free of the `vscode` module so that node runs its unit tests (src/test/).

/** Reads one setting under `kblaster.` with a fallback (vscode.WorkspaceConfiguration fits). */
export interface ConfigReader {
  get<T>(key: string, fallback: T): T;
}

/** Replaces ${workspaceFolder} and a leading ~/ in a path setting. */
export function expandPath(value: string, workspaceFolder: string | undefined, home: string | undefined): string {
  let out = value.trim();
  if (workspaceFolder !== undefined) out = out.split('${workspaceFolder}').join(workspaceFolder);
  if (home !== undefined && (out === '~' || out.startsWith('~/'))) out = home + out.slice(1);
  return out;
}

/** A number setting within [lo, hi], else undefined (the daemon keeps its default). */
function bounded(config: ConfigReader, key: string, lo: number, hi: number): number | undefined {
  const v = config.get<unknown>(key, undefined);
  return typeof v === 'number' && Number.isFinite(v) && v >= lo && v <= hi ? v : undefined;
}

/** An integer setting within [lo, hi], else undefined. */
function integer(config: ConfigReader, key: string, lo: number, hi: number): number | undefined {
  const v = bounded(config, key, lo, hi);
  return v !== undefined && Number.isInteger(v) ? v : undefined;
}

/** A string setting that is one of `allowed`, else undefined. */
function oneOf(config: ConfigReader, key: string, allowed: string[]): string | undefined {
  const v = config.get<unknown>(key, undefined);
  return typeof v === 'string' && allowed.includes(v) ? v : undefined;
}

/** A list of strings, else undefined. */
function strings(config: ConfigReader, key: string): string[] | undefined {
  const v = config.get<unknown>(key, undefined);
  return Array.isArray(v) && v.every((e) => typeof e === 'string') ? (v as string[]) : undefined;
}

/** An array of argument lists (each an array of strings), else undefined. */
function argumentLists(config: ConfigReader, key: string): string[][] | undefined {
  const v = config.get<unknown>(key, undefined);
  const isList = (l: unknown) => Array.isArray(l) && l.every((e) => typeof e === 'string');
  return Array.isArray(v) && v.every(isList) ? (v as string[][]) : undefined;
}

/** An object of strings (an environment: NAME -> VALUE), else undefined. */
function stringMap(config: ConfigReader, key: string): Record<string, string> | undefined {
  const v = config.get<unknown>(key, undefined);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  return Object.values(v as Record<string, unknown>).every((e) => typeof e === 'string') ? (v as Record<string, string>) : undefined;
}

/** Drops undefined and empty-string values so that the daemon's defaults apply. */
function compact(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || v === '') continue;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const inner = compact(v as Record<string, unknown>);
      if (Object.keys(inner).length > 0) out[k] = inner;
    } else {
      out[k] = v;
    }
  }
  return out;
}

/** The settings object the daemon reads (keys as in server/features/editor_settings.h). */
export function daemonSettings(config: ConfigReader, workspaceFolder?: string, home?: string): Record<string, unknown> {
  const path = (key: string) => expandPath(config.get<string>(key, ''), workspaceFolder, home);
  return compact({
    logLevel: config.get<string>('logLevel', 'info'),
    knowledgeBase: path('knowledgeBase'),
    arch: config.get<string>('arch', '').trim(),
    ncuPath: path('ncuPath'),
    profileOnSave: config.get<boolean>('profileOnSave', true),
    profile: {
      replay: path('profile.replay'),
      replayTimeline: path('profile.replayTimeline'),
    },
    analysis: {
      enabled: config.get<boolean>('analysis.enabled', true),
      debounceMs: bounded(config, 'analysis.debounceMs', 0, 10000),
    },
    optimize: {
      breadth: bounded(config, 'optimize.breadth', 1, 64),
      depth: bounded(config, 'optimize.depth', 1, 32),
      iterations: bounded(config, 'optimize.iterations', 1, 100),
      topK: bounded(config, 'optimize.topK', 1, 64),
      policy: oneOf(config, 'optimize.policy', ['weighted', 'thompson', 'greedy']),
      seed: integer(config, 'optimize.seed', 0, Number.MAX_SAFE_INTEGER),
      budgetTokens: bounded(config, 'optimize.budgetTokens', 0, 1e12),
      budgetGpuSeconds: bounded(config, 'optimize.budgetGpuSeconds', 0, 1e7),
      budgetWallSeconds: bounded(config, 'optimize.budgetWallSeconds', 0, 1e7),
      budgetCandidates: bounded(config, 'optimize.budgetCandidates', 0, 1e6),
      replayHarness: path('optimize.replayHarness'),
      replayPace: bounded(config, 'optimize.replayPace', 0, 10),
      harness: path('optimize.harness'),
      outputDir: path('optimize.outputDir'),
    },
    run: {
      args: strings(config, 'run.args'),
      cwd: path('run.cwd'),
      env: stringMap(config, 'run.env'),
      launch: integer(config, 'run.launch', 0, 1e9),
      timeoutSeconds: integer(config, 'run.timeoutSeconds', 1, 86400),
      command: strings(config, 'run.command'),
      build: strings(config, 'run.build'),
      shapes: argumentLists(config, 'run.shapes'),
    },
    llm: {
      provider: config.get<string>('llm.provider', ''),
      endpoint: config.get<string>('llm.endpoint', ''),
      model: config.get<string>('llm.model', ''),
      apiKeyEnv: config.get<string>('llm.apiKeyEnv', ''),
      replay: path('llm.replay'),
    },
  });
}

/** The initializationOptions the daemon gets: the settings, and beside them (not among them, so
 *  that no settings file can claim it) whether the user trusts the workspace, which the daemon
 *  needs before it runs the workspace's code (profiling, Optimize), and which editor this is, so
 *  that what the daemon writes itself (lens and action titles, hovers) names VS Code's remedies. */
export function initializationOptions(settings: Record<string, unknown>, workspaceTrusted: boolean): Record<string, unknown> {
  return { ...settings, workspaceTrusted, editor: 'vscode' };
}

/** The notification that tells a running daemon the user has trusted the workspace. */
export const setTrustNotification = 'kblaster/setTrust';

/** The request that asks the daemon what this machine offers (server/features/machine_status.cpp). */
export const machineStatusRequest = 'kblaster/machineStatus';

/** kblaster/machineStatus's answer. */
export interface MachineStatus {
  nvcc: string | null;
  gpu: string | null;
  ncu: string | null;
  replayedGpu?: boolean;
}

/** What the status bar shows: the daemon's state, the running job if any, whether the workspace
 *  is trusted (untrusted: compile-only), and what the machine offers (no GPU: said here, once,
 *  where the user can always see it). */
export interface StatusInput {
  daemon: 'starting' | 'running' | 'stopped';
  job?: { title: string; percentage?: number; message?: string };
  trusted?: boolean;
  machine?: MachineStatus;
  /** Why the daemon is stopped, when it did not start or stopped by itself. */
  failure?: string;
}

/** The tooltip's lines on the machine: one per tool, saying what its absence costs. */
function machineLines(m: MachineStatus): string[] {
  const gpu = m.gpu
    ? `GPU: ${m.gpu}`
    : `GPU: none on this machine: analysis is compile-only; Optimize ${m.replayedGpu ? 'replays recorded GPU results' : 'needs a GPU or recorded results (kblaster.optimize.replayHarness)'}`;
  const ncu = m.ncu ? `Nsight Compute: ${m.ncu}` : 'Nsight Compute (ncu): not found, so no profiles (kblaster.ncuPath)';
  const nvcc = m.nvcc ? `nvcc: ${m.nvcc}` : 'nvcc: not found, so no compiler diagnostics';
  return [gpu, ncu, nvcc];
}

/** Status-bar text (with a codicon) and tooltip. */
export function statusText(s: StatusInput): { text: string; tooltip: string } {
  if (s.daemon === 'stopped') {
    return { text: '$(error) KernelBlaster',
             tooltip: `KernelBlaster: ${s.failure ?? 'the daemon is not running'} (click: choose the kblaster executable, or restart)` };
  }
  if (s.daemon === 'starting') return { text: '$(loading~spin) KernelBlaster', tooltip: 'KernelBlaster: starting the daemon' };
  if (s.job) {
    const pct = s.job.percentage === undefined ? '' : ` ${Math.max(0, Math.min(100, Math.round(s.job.percentage)))}%`;
    const detail = s.job.message ? `: ${s.job.message}` : '';
    return { text: `$(sync~spin) KernelBlaster${pct}`, tooltip: `KernelBlaster: ${s.job.title}${detail}` };
  }
  const machine = s.machine ? machineLines(s.machine) : [];
  if (s.trusted === false) {
    return { text: '$(shield) KernelBlaster',
             tooltip: ['KernelBlaster: Restricted Mode, compile-only: profiling and Optimize wait until you trust this folder (click: Manage Workspace Trust)', ...machine].join('\n') };
  }
  const noGpu = s.machine && !s.machine.gpu ? ': no GPU' : '';
  return { text: `$(zap) KernelBlaster${noGpu}`, tooltip: ['KernelBlaster: ready', ...machine].join('\n') };
}

/** A contributed setting's scope (package.json's `scope`; absent means window). */
export type SettingScopeName = 'application' | 'machine' | 'machine-overridable' | 'window' | 'resource' | 'language-overridable';

/** The ids of the contributed settings whose id starts with `prefix` ("kblaster.llm."), or is
 *  `prefix` itself, in package.json's order. */
export function settingIds(properties: Record<string, { scope?: string }>, prefix: string): string[] {
  return Object.keys(properties).filter((id) => id === prefix || id.startsWith(prefix.endsWith('.') ? prefix : `${prefix}.`));
}

/** How to open the Settings editor on exactly `ids`, where they can be changed: the query lists
 *  them by id (every one found, whatever its words); in a remote window (code-server, Remote-SSH)
 *  the User tab hides machine-scoped settings ("No Settings Found"), so the Remote tab, which
 *  lists every setting but the application's, is opened instead. */
export function settingsOpener(ids: string[], scopes: Record<string, string | undefined>, remote: boolean):
    { command: string; argument: unknown } {
  const query = ids.map((id) => `@id:${id}`).join(' ');
  const machine = ids.some((id) => scopes[id] === 'machine' || scopes[id] === 'machine-overridable');
  if (remote && machine) return { command: 'workbench.action.openRemoteSettings', argument: { query } };
  return { command: 'workbench.action.openSettings', argument: query };
}
