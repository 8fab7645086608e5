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
 *  needs before it runs the workspace's code (profiling, Optimize). */
export function initializationOptions(settings: Record<string, unknown>, workspaceTrusted: boolean): Record<string, unknown> {
  return { ...settings, workspaceTrusted };
}

/** The notification that tells a running daemon the user has trusted the workspace. */
export const setTrustNotification = 'kblaster/setTrust';

/** What the status bar shows: the daemon's state, the running job if any, and whether the
 *  workspace is trusted (untrusted: compile-only). */
export interface StatusInput {
  daemon: 'starting' | 'running' | 'stopped';
  job?: { title: string; percentage?: number; message?: string };
  trusted?: boolean;
}

/** Status-bar text (with a codicon) and tooltip. */
export function statusText(s: StatusInput): { text: string; tooltip: string } {
  if (s.daemon === 'stopped') return { text: '$(error) KernelBlaster', tooltip: 'KernelBlaster: the daemon is not running (click to restart)' };
  if (s.daemon === 'starting') return { text: '$(loading~spin) KernelBlaster', tooltip: 'KernelBlaster: starting the daemon' };
  if (!s.job && s.trusted === false) {
    return { text: '$(shield) KernelBlaster', tooltip: 'KernelBlaster: ready, compile-only: profiling and Optimize wait until you trust this workspace (Manage Workspace Trust)' };
  }
  if (!s.job) return { text: '$(zap) KernelBlaster', tooltip: 'KernelBlaster: ready' };
  const pct = s.job.percentage === undefined ? '' : ` ${Math.max(0, Math.min(100, Math.round(s.job.percentage)))}%`;
  const detail = s.job.message ? `: ${s.job.message}` : '';
  return { text: `$(sync~spin) KernelBlaster${pct}`, tooltip: `KernelBlaster: ${s.job.title}${detail}` };
}
