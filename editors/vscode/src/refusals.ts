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
  detail?: string;
}

const kinds: RefusalKind[] = ['untrusted', 'no_task', 'task_unreadable', 'not_saved', 'no_gpu', 'no_model'];

/** The refusal in a JSON-RPC error's data, or undefined for any other error. */
export function refusalOf(data: unknown): Refusal | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const d = data as Record<string, unknown>;
  if (typeof d.refusal !== 'string' || !kinds.includes(d.refusal as RefusalKind) || typeof d.command !== 'string') return undefined;
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  return { refusal: d.refusal as RefusalKind, command: d.command, kernel: text(d.kernel), file: text(d.file), detail: text(d.detail) };
}

/** What a button does; extension.ts performs it. */
export type Fix =
  | 'manageTrust'        // workbench.trust.manage
  | 'createTask'         // kblaster.createTask, then open the task for its reference
  | 'setRunCommand'      // ask for the program, write kblaster.run.command, retry
  | 'saveAndRetry'       // save the document, retry
  | 'replaySettings'     // the kblaster.optimize.replayHarness setting
  | 'modelSettings'      // the kblaster.llm settings
  | 'ncuSetting'         // the kblaster.ncuPath setting
  | 'showProblems'       // the Problems panel
  | 'chooseExecutable'   // pick kblaster, write kblaster.path where it was set
  | 'showOutput'         // the KernelBlaster output channel
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

/** The notification for a refused command. */
export function refusalAdvice(r: Refusal): Advice {
  switch (r.refusal) {
    case 'untrusted':
      return { severity: 'warning', message: `${action(r)} needs a trusted folder: KernelBlaster builds and runs the folder's code.`,
               buttons: [{ title: 'Manage Workspace Trust', fix: 'manageTrust' }] };
    case 'no_task':
      return { severity: 'warning',
               message: `${action(r)} needs a reference to measure against: create a task for it, or set the program that launches it.`,
               buttons: [{ title: 'Create a Task', fix: 'createTask' }, { title: 'Set the Program to Run', fix: 'setRunCommand' }] };
    case 'task_unreadable':
      return { severity: 'error', message: `The task of ${basename(r.file)} cannot be read: ${clause(r.detail) || 'see the output'}.`,
               buttons: [{ title: 'Show Output', fix: 'showOutput' }] };
    case 'not_saved':
      return { severity: 'warning', message: `Save ${basename(r.file)} first: its program is built and run from the file on disk.`,
               buttons: [{ title: 'Save and Retry', fix: 'saveAndRetry' }] };
    case 'no_gpu': {
      // The detail is the daemon's whole sentence (in the output); the toast says its gist.
      const why = /libcuda/.test(r.detail ?? '') ? 'has no NVIDIA driver' : 'has none';
      return { severity: 'warning',
               message: `${action(r)} needs an NVIDIA GPU to measure on, and this machine ${why}. Replay recorded GPU results, or open the folder on a GPU machine.`,
               buttons: [{ title: 'Use Recorded Results', fix: 'replaySettings' }] };
    }
    case 'no_model':
      return { severity: 'error', message: `The model in your KernelBlaster settings cannot be used: ${clause(r.detail) || 'see the output'}.`,
               buttons: [{ title: 'Open Model Settings', fix: 'modelSettings' }] };
  }
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
      return { severity: 'warning', message: `${compiled}: Nsight Compute (ncu) was not found (${statics}).`,
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
           buttons: [{ title: 'Show Output', fix: 'showOutput' }, { title: 'Restart', fix: 'retry' }] };
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
