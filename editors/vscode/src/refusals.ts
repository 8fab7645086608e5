// What the extension says when something cannot run, in VS Code's terms, with the button that
// removes the cause: a command the daemon refused (its JSON-RPC error carries a typed `data`,
// server/features/refusal.h), a profile that could not profile, a daemon that did not start.
// Kept free of the `vscode` module so that node runs its unit tests (src/test/); extension.ts
// shows the advice and performs the fixes its buttons name.

/** The daemon's refusal kinds (refusal.h's to_string). */
export type RefusalKind = 'untrusted' | 'no_task' | 'task_unreadable' | 'not_saved' | 'no_gpu' | 'no_model';

/** A refused command's error data. */
export interface Refusal {
  refusal: RefusalKind;
  command: string;
  kernel?: string;
  file?: string;
  /** The cause alone: never a repeat of what the kind says. */
  detail?: string;
  /** no_model: the model, its provider, the key's variable, each with where it came from;
   *  reason 'no_key' when that variable is unset in the daemon's environment. */
  model?: string;
  provider?: string;
  providerFrom?: string;
  keyEnv?: string;
  keyEnvFrom?: string;
  reason?: string;
  /** no_model: the model's name belongs to this provider instead (a Claude model on openai). */
  suggestedProvider?: string;
  suggestedKeyEnv?: string;
  /** no_gpu: the shipped example the daemon can replay here (kblaster.replayExample). */
  example?: string;
  /** task_unreadable: the task file to open and fix; no_task: the file's task file, another kernel's. */
  taskFile?: string;
}

/** Where the extension runs, for words that depend on it: a remote window's daemon runs on the
 *  remote machine (vscode.env.remoteName: 'ssh-remote', 'wsl', ...). */
export interface Where {
  remote?: string;
}

const kinds: RefusalKind[] = ['untrusted', 'no_task', 'task_unreadable', 'not_saved', 'no_gpu', 'no_model'];

/** The refusal in a JSON-RPC error's data, or undefined for any other error. */
export function refusalOf(data: unknown): Refusal | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const d = data as Record<string, unknown>;
  if (typeof d.refusal !== 'string' || !kinds.includes(d.refusal as RefusalKind) || typeof d.command !== 'string') return undefined;
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const r: Refusal = { refusal: d.refusal as RefusalKind, command: d.command };
  for (const key of ['kernel', 'file', 'detail', 'model', 'provider', 'providerFrom', 'keyEnv', 'keyEnvFrom', 'reason',
    'suggestedProvider', 'suggestedKeyEnv', 'example', 'taskFile'] as const) {
    const v = text(d[key]);
    if (v !== undefined) r[key] = v;
  }
  return r;
}

/** What a button does; extension.ts performs it. */
export type Fix =
  | 'manageTrust'        // workbench.trust.manage
  | 'createTask'         // kblaster.createTask, then open the task for its reference
  | 'openTaskFile'       // the refusal's taskFile, to fix it
  | 'setRunCommand'      // ask for the program, write kblaster.run.command, retry
  | 'saveAndRetry'       // save the document, retry
  | 'replaySettings'     // the settings of replayed results (kblaster.optimize.replayHarness, kblaster.llm.replay)
  | 'replayExample'      // kblaster.replayExample: the shipped example, replayed with the settings it was recorded with
  | 'openOnGpuMachine'   // Remote-SSH: Connect to Host (or how, when Remote-SSH is not installed)
  | 'modelSettings'      // every kblaster.llm.* setting
  | 'useSuggestedProvider' // write the refusal's suggestedProvider to kblaster.llm.provider, retry
  | 'ncuSetting'         // the kblaster.ncuPath setting
  | 'showProblems'       // the Problems panel
  | 'chooseExecutable'   // pick kblaster, write kblaster.path where it was set
  | 'showOutput'         // the KernelBlaster output channel
  | 'openReport'         // the run's report.md
  | 'restart'            // kblaster.restartServer
  | 'retry';             // the same command again

export interface Button {
  title: string;
  fix: Fix;
}

/** One notification: how loud, what it says (no "KernelBlaster:" prefix: VS Code names the
 *  extension under every notification), and its buttons. */
export interface Advice {
  severity: 'info' | 'warning' | 'error';
  message: string;
  buttons: Button[];
}

function basename(uriOrPath: string | undefined): string {
  if (!uriOrPath) return 'the file';
  const clean = uriOrPath.replace(/[?#].*$/, '');
  return decodeURIComponent(clean.slice(clean.lastIndexOf('/') + 1)) || 'the file';
}

/** `detail` as the end of a sentence: no trailing full stop (the advice adds its own). */
function clause(detail: string | undefined): string {
  return (detail ?? '').trim().replace(/\.+$/, '');
}

/** What the user asked for, in the words of the command: "Optimize scale_half", "Profiling". */
function action(r: Refusal): string {
  if (r.command === 'kblaster.profile') return 'Profiling';
  const verb = r.command === 'kblaster.applyTechnique' ? 'Applying a technique to' : 'Optimize';
  return r.kernel ? `${verb} ${r.kernel}` : verb === 'Optimize' ? 'Optimize' : 'Applying a technique';
}

/** "the KernelBlaster daemon" with where it runs in a remote window. */
function theDaemon(where: Where): string {
  // (The remote's name is an authority in code-server, "127.0.0.1:8080": not worth saying.)
  return where.remote ? 'the KernelBlaster daemon on the remote machine' : 'the KernelBlaster daemon';
}

/** A provider's name as its maker spells it. */
function providerName(p: string | undefined): string {
  return p === 'anthropic' ? 'Anthropic' : p === 'openai' ? 'OpenAI' : p ?? '';
}

/** no_model: the provider setting, the key's variable and where it must be set, once. */
function modelAdvice(r: Refusal, where: Where): Advice {
  const model = r.model ? `The model ${r.model}` : 'The model in your KernelBlaster settings';
  const settings: Button = { title: 'Open Model Settings', fix: 'modelSettings' };
  if (r.reason !== 'no_key' || !r.keyEnv) {
    return { severity: 'error', message: `${model} cannot be used: ${clause(r.detail) || 'see the output'}.`, buttons: [settings] };
  }
  const provider = `kblaster.llm.provider is ${r.provider ?? 'openai'}${r.providerFrom === 'default' ? ' (the default)' : ''}`;
  let message = `${model} cannot be used: its API key is read from the environment variable ${r.keyEnv} (${provider}), `
    + `which is not set in the environment of ${theDaemon(where)}.`;
  const buttons: Button[] = [];
  if (r.suggestedProvider) {
    const key = r.suggestedKeyEnv ?? r.keyEnv;
    message += ` ${r.model} is an ${providerName(r.suggestedProvider)} model: set kblaster.llm.provider to ${r.suggestedProvider}; `
      + `its key is then read from ${key}, which must be set there.`;
    buttons.push({ title: `Use ${r.suggestedProvider}`, fix: 'useSuggestedProvider' });
  } else {
    message += ` Set it where the daemon starts${where.remote ? ' (the remote machine\'s shell profile)' : ''}, or name another variable in kblaster.llm.apiKeyEnv.`;
  }
  buttons.push(settings);
  return { severity: 'error', message, buttons };
}

/** The notification for a refused command. `where`: the window's kind (remote or local). */
export function refusalAdvice(r: Refusal, where: Where = {}): Advice {
  switch (r.refusal) {
    case 'untrusted':
      return { severity: 'warning', message: `${action(r)} needs a trusted folder: KernelBlaster builds and runs the folder's code.`,
               buttons: [{ title: 'Manage Workspace Trust', fix: 'manageTrust' }] };
    case 'no_task':
      if (r.taskFile) {
        // The file's task file is another kernel's: a second cannot be created beside it.
        return { severity: 'warning',
                 message: `${action(r)} needs a reference to measure against: ${basename(r.taskFile)} is the task of another kernel of ${basename(r.file)}; set the program that launches it.`,
                 buttons: [{ title: 'Set the Program to Run', fix: 'setRunCommand' }, { title: 'Open the Task File', fix: 'openTaskFile' }] };
      }
      return { severity: 'warning',
               message: `${action(r)} needs a reference to measure against: create a task for it, or set the program that launches it.`,
               buttons: [{ title: 'Create a Task', fix: 'createTask' }, { title: 'Set the Program to Run', fix: 'setRunCommand' }] };
    case 'task_unreadable':
      // The kernel's own task: the file's other kernels are not blocked by it.
      return { severity: 'error',
               message: `The task of ${r.kernel ? `${r.kernel} (${basename(r.file)})` : basename(r.file)} cannot be read: ${clause(r.detail) || 'see the output'}.`,
               buttons: r.taskFile ? [{ title: 'Open the Task File', fix: 'openTaskFile' }] : [{ title: 'Show Output', fix: 'showOutput' }] };
    case 'not_saved':
      return { severity: 'warning', message: `Save ${basename(r.file)} first: its program is built and run from the file on disk.`,
               buttons: [{ title: 'Save and Retry', fix: 'saveAndRetry' }] };
    case 'no_gpu': {
      // The detail is the daemon's whole sentence (in the output); the toast says its gist, and
      // what works from here: the folder opened where a GPU is, or the shipped example replayed.
      const why = /libcuda/.test(r.detail ?? '') ? 'has no NVIDIA driver' : 'has none';
      const machine = where.remote ? 'the machine this window is connected to' : 'this machine';
      const buttons: Button[] = [{ title: 'Open on a GPU Machine', fix: 'openOnGpuMachine' }];
      if (r.example) buttons.unshift({ title: 'Replay the Example', fix: 'replayExample' });
      buttons.push({ title: 'Use Recorded Results', fix: 'replaySettings' });
      return { severity: 'warning',
               message: `${action(r)} needs an NVIDIA GPU to measure on, and ${machine} ${why}. Open this folder on a machine with one `
                 + '(Remote-SSH: Connect to Host, then Open Folder)'
                 + (r.example ? `, or replay the example ${r.example}: a run recorded on a GPU, labelled as replayed.` : '.'),
               buttons };
    }
    case 'no_model':
      return modelAdvice(r, where);
  }
}

/** kblaster.optimize's and kblaster.replayExample's answer, as far as the end of a run needs it. */
export interface OptimizeResult {
  bestSpeedup?: number;
  stopReason?: string;
  replayed?: boolean;
  reportPath?: string;
  recordedOn?: string;
  /** What stopped a run that never finished (a replay with no recording of the kernel). */
  error?: string;
  /** The daemon's sentence on the run (the diagnostic's). */
  message?: string;
  candidates?: number;
  example?: string;
}

/** The message at the end of a run: "done" only for a run that ran to its end; one that stopped
 *  on an error says what stopped it; a replayed figure says it was not measured here. */
export function runEndAdvice(title: string, r: OptimizeResult): Advice {
  const report: Button[] = r.reportPath ? [{ title: 'Open Report', fix: 'openReport' }] : [];
  if (r.error !== undefined || (r.stopReason ?? '').startsWith('error')) {
    const why = clause(r.error ?? (r.stopReason ?? '').replace(/^error:\s*/, ''));
    const hint = /^replay: no recording/.test(why)
      ? ' The recording holds other runs: it replays only the kernel and settings it was recorded with.' : '';
    return { severity: 'warning', message: `${title} stopped before any result: ${why}.${hint}`, buttons: [...report, { title: 'Show Output', fix: 'showOutput' }] };
  }
  if (r.stopReason === 'waiting') {
    return { severity: 'info', message: `${title}: waiting for the model's answers; Optimize again resumes the run.`, buttons: report };
  }
  const x = typeof r.bestSpeedup === 'number' ? `${r.bestSpeedup.toFixed(2)}x` : '';
  const how = r.replayed ? `replayed from a recording${r.recordedOn ? ` made on an ${r.recordedOn}` : ''}, not measured here` : 'measured';
  const found = typeof r.bestSpeedup === 'number' && r.bestSpeedup > 1 ? `${x} faster, ${how}` : `no faster version found (${how})`;
  const stopped = r.stopReason && r.stopReason !== 'finished' ? ` (stopped: ${r.stopReason.replace(/_/g, ' ')})` : '';
  return { severity: 'info', message: `${title} done: ${found}${stopped}.`, buttons: report };
}

/** A command's error that is no refusal, under the title of what the user asked for ("Optimize
 *  scale_half: ..."); the daemon's own "kblaster.optimize: " before its sentence is left out, the
 *  title saying it in the user's words. */
export function commandErrorText(title: string, message: string): string {
  return `${title.charAt(0).toUpperCase()}${title.slice(1)}: ${message.replace(/^kblaster\.\w+: /, '')}`;
}

/** The self-test's answer in words. */
export function selfTestText(result: unknown): string {
  const r = (result ?? {}) as { completedSteps?: unknown; cancelled?: unknown };
  const steps = typeof r.completedSteps === 'number' ? r.completedSteps : undefined;
  if (r.cancelled === true) return `Self-test cancelled after ${steps ?? 0} steps.`;
  return steps === undefined ? 'Self-test finished: the daemon answered.'
    : `Self-test passed: the daemon ran ${steps} steps with progress and answered.`;
}

/** kblaster.profile's answer (profile_command.cpp), as far as the advice needs it. */
export interface ProfileResult {
  live?: boolean;
  liveSkipped?: string;
  liveSkippedReason?: string;
  error?: string;
}

/** What to say after a profile that profiled nothing live; undefined when it did, or when the
 *  reason needs no words (the analysis already shows it). */
export function profileAdvice(result: ProfileResult | null | undefined, fileName: string): Advice | undefined {
  if (!result || result.live) return undefined;
  const compiled = `Compiled ${fileName}, not profiled`;
  const statics = 'registers, spills and occupancy are in the hover';
  switch (result.liveSkippedReason) {
    case 'no_gpu':
      return { severity: 'info', message: `${compiled}: this machine has no NVIDIA GPU (${statics}).`, buttons: [] };
    case 'no_ncu':
      return { severity: 'warning', message: `${compiled}: Nsight Compute (ncu) was not found: set kblaster.ncuPath (${statics}).`,
               buttons: [{ title: 'Set ncu Path', fix: 'ncuSetting' }] };
    case 'does_not_compile':
      return { severity: 'warning', message: `${fileName} does not compile: nvcc's errors are in the Problems panel.`,
               buttons: [{ title: 'Show Problems', fix: 'showProblems' }] };
    case 'no_task':
      return { severity: 'info', message: `${compiled}: it has no task and no main() to run (${statics}).`,
               buttons: [{ title: 'Create a Task', fix: 'createTask' }, { title: 'Set the Program to Run', fix: 'setRunCommand' }] };
    case 'not_saved':
      return { severity: 'info', message: `${compiled}: save it first (a profile runs the file on disk).`, buttons: [] };
    case 'profile_on_save_off':
      return { severity: 'info', message: `${compiled}: profiling is off (kblaster.profileOnSave).`, buttons: [] };
    default:
      return result.liveSkipped ? { severity: 'info', message: `${compiled}: ${clause(result.liveSkipped)}.`, buttons: [] } : undefined;
  }
}

/** Where a setting's value came from, as the Settings editor names the scope. */
export type SettingScope = 'user' | 'workspace' | 'folder' | 'default';

/** The daemon did not answer initialize: `command` (from kblaster.path in `scope`) is not it. */
export function startFailureAdvice(command: string, scope: SettingScope, why: string): Advice {
  const from = scope === 'default' ? 'the default kblaster.path' : `kblaster.path in your ${scope === 'folder' ? 'folder' : scope} settings`;
  return { severity: 'error', message: `KernelBlaster's daemon did not start: ${command} (${from}) ${clause(why)}.`,
           buttons: [{ title: 'Choose kblaster Executable', fix: 'chooseExecutable' }, { title: 'Show Output', fix: 'showOutput' }] };
}

/** The daemon ran, then stopped `times` times within minutes: not restarted again. */
export function crashAdvice(command: string, times: number): Advice {
  return { severity: 'error', message: `KernelBlaster's daemon (${command}) stopped ${times} times in 3 minutes and is not restarted.`,
           buttons: [{ title: 'Show Output', fix: 'showOutput' }, { title: 'Choose kblaster Executable', fix: 'chooseExecutable' },
             { title: 'Restart', fix: 'restart' }] };
}

/** The stopped daemon's status item clicked: why it is stopped, and the choices (another
 *  executable, or the same one again), not a restart of the same binary without a word. */
export function stoppedAdvice(command: string, failure: string | undefined): Advice {
  return { severity: 'warning', message: `KernelBlaster's daemon is not running${failure ? `: ${clause(failure)}` : ''}. It is started as ${command} (kblaster.path).`,
           buttons: [{ title: 'Choose kblaster Executable', fix: 'chooseExecutable' }, { title: 'Restart', fix: 'restart' },
             { title: 'Show Output', fix: 'showOutput' }] };
}

/** Splits a command line the way a shell would for plain words and quotes ('a b', "a b"). */
export function splitCommandLine(line: string): string[] {
  const out: string[] = [];
  let word = '';
  let quote: string | undefined;
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < line.length) word += line[++i];
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) out.push(word);
  return out;
}
