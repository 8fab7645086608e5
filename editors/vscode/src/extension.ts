// KernelBlaster for VS Code: starts `kblaster serve` for CUDA files and wires it to VS Code
// through vscode-languageclient (diagnostics, hover, code lenses, code actions, edits, progress
// and cancellation come from the library; this file finds the daemon, passes settings and the
// workspace's trust, shows the daemon, the machine and its jobs in the status bar, and adds
// commands). Whatever cannot run is said in VS Code's terms with the button that removes the
// cause (refusals.ts words it; fix() below does what the button says).
// In an untrusted workspace (package.json: untrustedWorkspaces "limited") the daemon is told so
// and runs nothing of the workspace's until the user grants trust, which it is then told too.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  TransportKind,
  WorkDoneProgress,
} from 'vscode-languageclient/node';
import {
  Advice, commandErrorText, crashAdvice, Fix, OptimizeResult, profileAdvice, ProfileResult, Refusal, refusalAdvice, refusalOf, runEndAdvice, SettingScope,
  selfTestText, splitCommandLine, startFailureAdvice, stoppedAdvice,
} from './refusals';
import {
  daemonSettings as mapSettings, initializationOptions, MachineStatus, machineStatusRequest, setTrustNotification, settingIds,
  settingsOpener, StatusInput, statusText,
} from './settings';

const section = 'kblaster';
let client: LanguageClient | undefined;
let output: vscode.OutputChannel | undefined;
let statusItem: vscode.StatusBarItem | undefined;
const status: StatusInput = { daemon: 'stopped' };
let nextJob = 1;

/** vscode-languageclient forces a notification of its own when the daemon cannot start or stops
 *  ("couldn't create connection to server", "crashed 5 times"): it names no setting and offers
 *  only the output. The extension says it instead, naming kblaster.path, with the button that
 *  fixes it; the library's words still go to the output channel. */
class KblasterClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    super.error(message, data, showNotification === 'force' ? false : showNotification);
  }
}

/** The settings the daemon reads, as sent in initializationOptions and on every change. */
function daemonSettings(): Record<string, unknown> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return mapSettings(vscode.workspace.getConfiguration(section), folder, os.homedir());
}

function showStatus(): void {
  if (!statusItem) return;
  const { text, tooltip } = statusText(status);
  statusItem.text = text;
  statusItem.tooltip = tooltip;
  // The click leads to what the item says is missing (a stopped daemon: the choice of another
  // executable or a restart, not the same binary started again without a word).
  statusItem.command = status.daemon === 'stopped' ? 'kblaster.daemonStopped'
    : status.trusted === false && !status.job ? 'workbench.trust.manage' : 'kblaster.showOutput';
  statusItem.show();
}

/** Asks the daemon what this machine offers, for the status bar (once per daemon). */
async function refreshMachineStatus(): Promise<void> {
  if (!client || client.state !== State.Running) return;
  try {
    status.machine = await client.sendRequest<MachineStatus>(machineStatusRequest);
    showStatus();
  } catch {
    // An older daemon without the request: the status bar says less.
  }
}

// ---- what the buttons do ----

/** The command a notification is about, so that a button can retry it or act on its kernel. */
interface Context {
  command: string;
  args: { uri?: string; kernel?: string; technique?: string; example?: string };
  /** The refusal the notification words (its facts: the suggested provider, the example). */
  refusal?: Refusal;
  /** The run's report, for [Open Report]. */
  report?: string;
}

/** Where this window runs the extension and the daemon: a remote window's are on the remote side. */
function where(): { remote?: string } {
  return { remote: vscode.env.remoteName };
}

/** Opens the Settings editor on `ids` where they can be changed (settingsOpener says how). */
async function openSettings(ids: string[]): Promise<void> {
  const properties = (vscode.extensions.getExtension('kernelblaster.kblaster')?.packageJSON?.contributes?.configuration?.properties ?? {}) as
    Record<string, { scope?: string }>;
  const scopes = Object.fromEntries(Object.entries(properties).map(([id, p]) => [id, p.scope]));
  const opener = settingsOpener(ids, scopes, vscode.env.remoteName !== undefined);
  await vscode.commands.executeCommand(opener.command, opener.argument);
}

/** Every contributed setting whose id starts with `prefix`. */
function group(prefix: string): string[] {
  const properties = (vscode.extensions.getExtension('kernelblaster.kblaster')?.packageJSON?.contributes?.configuration?.properties ?? {}) as
    Record<string, { scope?: string }>;
  return settingIds(properties, prefix);
}

/** Shows `advice` and performs the fix of the button the user picks. */
async function showAdvice(advice: Advice, context?: Context): Promise<void> {
  const show = advice.severity === 'error' ? vscode.window.showErrorMessage
    : advice.severity === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const choice = await show(advice.message, ...advice.buttons.map((b) => b.title));
  const button = advice.buttons.find((b) => b.title === choice);
  if (button) await fix(button.fix, context);
}

/** The workspace folder of `uri`, else the first one. */
function folderOf(uri: string | undefined): vscode.WorkspaceFolder | undefined {
  const folder = uri ? vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(uri)) : undefined;
  return folder ?? vscode.workspace.workspaceFolders?.[0];
}

/** Runs the context's command again (through the middleware: progress, refusals). */
async function retry(context: Context | undefined): Promise<void> {
  if (context) await vscode.commands.executeCommand(context.command, context.args);
}

async function fix(what: Fix, context?: Context): Promise<void> {
  const kernel = context?.args.kernel;
  switch (what) {
    case 'manageTrust':
      await vscode.commands.executeCommand('workbench.trust.manage');
      return;
    case 'createTask':
      // Through the middleware, as from the code action: createTask() says what was written.
      if (context?.args.uri && kernel) await vscode.commands.executeCommand('kblaster.createTask', { uri: context.args.uri, kernel });
      return;
    case 'openTaskFile':
      if (context?.refusal?.taskFile) await vscode.window.showTextDocument(vscode.Uri.file(context.refusal.taskFile), { preview: false });
      return;
    case 'setRunCommand': {
      const folder = folderOf(context?.args.uri);
      const config = vscode.workspace.getConfiguration(section, folder?.uri);
      const line = await vscode.window.showInputBox({
        title: 'The program that launches the kernel',
        prompt: 'The command that runs your program, as your build makes it (run from the file\'s folder, or kblaster.run.cwd). '
          + 'It must link the CUDA runtime as a shared library.',
        placeHolder: './build/app --size 4096',
        value: config.get<string[]>('run.command', []).join(' '),
        ignoreFocusOut: true,
        validateInput: (v) => (splitCommandLine(v).length === 0 ? 'Type the command that runs your program' : undefined),
      });
      if (line === undefined) return;
      await config.update('run.command', splitCommandLine(line),
                          folder ? vscode.ConfigurationTarget.WorkspaceFolder : vscode.ConfigurationTarget.Global);
      // The setting reaches the daemon as a notification, handled in order with the others;
      // the retried command is a request, which may be served before it: let it arrive first.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await retry(context);
      return;
    }
    case 'saveAndRetry': {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === context?.args.uri);
      if (doc && !(await doc.save())) return;
      await retry(context);
      return;
    }
    case 'replaySettings':
      await openSettings(['kblaster.optimize.replayHarness', 'kblaster.llm.replay', 'kblaster.optimize.replayPace']);
      return;
    case 'modelSettings':
      await openSettings(group('kblaster.llm.'));
      return;
    case 'ncuSetting':
      await openSettings(['kblaster.ncuPath']);
      return;
    case 'replayExample':
      await runLongCommand('kblaster.replayExample', [{ example: context?.refusal?.example }]);
      return;
    case 'openOnGpuMachine':
      await openOnGpuMachine();
      return;
    case 'useSuggestedProvider': {
      const provider = context?.refusal?.suggestedProvider;
      if (!provider) return;
      const config = vscode.workspace.getConfiguration(section, folderOf(context?.args.uri)?.uri);
      const inspected = config.inspect<string>('llm.provider');
      // Written where it is set now (a workspace value would hide a user one).
      const target = inspected?.workspaceFolderValue !== undefined ? vscode.ConfigurationTarget.WorkspaceFolder
        : inspected?.workspaceValue !== undefined ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
      await config.update('llm.provider', provider, target);
      await new Promise((resolve) => setTimeout(resolve, 500));  // the setting reaches the daemon first (see setRunCommand)
      await retry(context);
      return;
    }
    case 'openReport':
      if (context?.report) await vscode.window.showTextDocument(vscode.Uri.file(context.report));
      return;
    case 'restart':
      await vscode.commands.executeCommand('kblaster.restartServer');
      return;
    case 'showProblems':
      await vscode.commands.executeCommand('workbench.actions.view.problems');
      return;
    case 'chooseExecutable':
      await chooseExecutable();
      return;
    case 'showOutput':
      output?.show(true);
      return;
    case 'retry':
      if (context) await retry(context);
      else await vscode.commands.executeCommand('kblaster.restartServer');
      return;
  }
}

/** What kblaster.createTask answers (server/features/create_task.cpp). */
interface CreatedTask {
  taskPath?: string;
  applied?: boolean;
  entryPointAdded?: boolean;
  /** What was written where and what is left to the user, in one paragraph. */
  message?: string;
}

/** kblaster.createTask, from the code action or a refusal's [Create a Task]: the daemon proposes
 *  the task file and, when the source has none, a kb_forward stub, as one edit. The task file is
 *  saved and opened (its edit creates it empty: unsaved, the daemon could not read it); the stub
 *  stays unsaved in the kernel's file for review. The daemon's message says what was written where
 *  and what is left, with [Show kb_forward] to see the stub and [Optimize k]. */
async function createTask(args: Context['args'], send: () => Promise<unknown>): Promise<CreatedTask | undefined> {
  const kernel = args.kernel ?? '';
  let result: CreatedTask | undefined;
  try {
    result = (await send()) as CreatedTask | undefined;
  } catch (error) {
    void vscode.window.showErrorMessage(`Could not create a task for ${kernel}: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  if (!result?.taskPath) return result;
  const source = args.uri ? vscode.workspace.textDocuments.find((d) => d.uri.toString() === args.uri) : undefined;
  if (result.applied) {
    const task = await vscode.workspace.openTextDocument(vscode.Uri.file(result.taskPath));
    if (task.isDirty) await task.save();
    await vscode.window.showTextDocument(task, { preview: false });
  }
  void sayCreated(result, args, source);  // the command answers now, not when the message is closed
  return result;
}

/** The daemon's message on a task just created, with its buttons. */
async function sayCreated(result: CreatedTask, args: Context['args'], source: vscode.TextDocument | undefined): Promise<void> {
  const kernel = args.kernel ?? '';
  const showStub = 'Show kb_forward';
  const optimize = `Optimize ${kernel}`;
  const buttons = result.applied && result.entryPointAdded && source ? [showStub, optimize] : result.applied ? [optimize] : [];
  const said = result.message ?? `Task created: ${path.basename(result.taskPath ?? '')}.`;
  const choice = await (result.applied ? vscode.window.showInformationMessage(said, ...buttons)
    : vscode.window.showWarningMessage(`${said} The edit was not applied.`));
  if (choice === showStub && source) {
    const at = source.getText().lastIndexOf('int kb_forward(');
    const editor = await vscode.window.showTextDocument(source, { preview: false });
    if (at >= 0) {
      const where = source.positionAt(at);
      editor.selection = new vscode.Selection(where, where);
      editor.revealRange(new vscode.Range(where, where), vscode.TextEditorRevealType.InCenter);
    }
  } else if (choice === optimize && args.uri) {
    await retry({ command: 'kblaster.optimize', args: { uri: args.uri, kernel } });
  }
}

/** Remote-SSH's Connect to Host when it is installed; else how to open the folder on a GPU
 *  machine, with its documentation a click away. */
async function openOnGpuMachine(): Promise<void> {
  if (vscode.extensions.getExtension('ms-vscode-remote.remote-ssh')) {
    await vscode.commands.executeCommand('opensshremotes.openEmptyWindow');
    return;
  }
  const docs = 'Remote-SSH Documentation';
  const choice = await vscode.window.showInformationMessage(
      'To optimize on a GPU, open this folder on a machine with an NVIDIA GPU: install the Remote - SSH extension, run '
      + '"Remote-SSH: Connect to Host", then Open Folder there (KernelBlaster runs beside the folder, on the GPU machine).',
      { modal: true }, docs);
  if (choice === docs) await vscode.env.openExternal(vscode.Uri.parse('https://code.visualstudio.com/docs/remote/ssh'));
}

// ---- the daemon's long commands ----

// Long commands the daemon runs with work-done progress: sent with our own token so that the
// status bar can follow the percentage. The notification with its Cancel button opens when the
// daemon begins the work: a command refused before it starts shows the refusal alone.
const longCommands = new Set(['kblaster.optimize', 'kblaster.applyTechnique', 'kblaster.profile', 'kblaster.optimizeProgram',
  'kblaster.replayExample']);

async function runLongCommand(command: string, args: unknown[]): Promise<unknown> {
  if (!client) return undefined;
  const token = `kblaster-vscode-${nextJob++}`;
  const first = (args[0] ?? {}) as Context['args'];
  const kernel = first.kernel ?? '';
  const title = command === 'kblaster.replayExample' ? `replay of the example${first.example ? ` ${first.example}` : ''}`
    : `${command.replace('kblaster.', '')} ${kernel}`.trim();
  const cancel = new vscode.CancellationTokenSource();
  let progress: vscode.Progress<{ message?: string; increment?: number }> | undefined;
  // The notification closes when the command ends, also when it ends before VS Code has called
  // withProgress's callback (a refusal right after the progress began): then at once.
  let ended = false;
  let finish: () => void = () => { ended = true; };
  let last = 0;
  const sub = client.onProgress(WorkDoneProgress.type, token, (value) => {
    if (value.kind === 'begin' && !progress) {
      void vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: `KernelBlaster: ${title}`, cancellable: true },
          (p, cancelled) => {
            progress = p;
            cancelled.onCancellationRequested(() => cancel.cancel());
            if (value.message) p.report({ message: value.message });
            return new Promise<void>((resolve) => {
              if (ended) resolve();
              else finish = resolve;
            });
          });
    }
    if (value.kind === 'end') return;
    const pct = value.percentage ?? last;
    progress?.report({ message: value.message, increment: Math.max(0, pct - last) });
    last = pct;
    status.job = { title, percentage: pct, message: value.message };
    showStatus();
  });
  try {
    const result = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args, workDoneToken: token }, cancel.token);
    finish();
    const report = (result as { reportPath?: string } | null)?.reportPath;
    if (report) {
      // One message for the end of a run, with the report a click away: "done" only when the
      // run ran; a run stopped by an error says what stopped it.
      const r = result as OptimizeResult & { inputPath?: string; bestPath?: string };
      if (command === 'kblaster.replayExample' && r.inputPath && r.bestPath && !r.error) {
        // The example's result itself: its kernel beside the best version the replay found.
        await vscode.commands.executeCommand('vscode.diff', vscode.Uri.file(r.inputPath), vscode.Uri.file(r.bestPath),
                                             `${r.example ?? 'example'}: input ↔ best (replayed, not measured here)`);
      }
      const advice = runEndAdvice(`KernelBlaster: ${title}`, r);
      void showAdvice({ ...advice, message: `${advice.message} (report: ${report})` }, { command, args: first, report });
    }
    if (command === 'kblaster.profile') {
      const file = first.uri ? path.basename(vscode.Uri.parse(first.uri).fsPath) : 'the file';
      const advice = profileAdvice(result as ProfileResult, file);
      if (advice) void showAdvice(advice, { command, args: first });
    }
    return result;
  } catch (error) {
    finish();
    if (cancel.token.isCancellationRequested) return undefined;
    const refusal = error instanceof ResponseError ? refusalOf(error.data) : undefined;
    if (refusal) {
      void showAdvice(refusalAdvice(refusal, where()), { command, args: { ...first, kernel: refusal.kernel ?? first.kernel }, refusal });
    } else {
      const message = error instanceof Error ? error.message : String(error);
      void vscode.window.showErrorMessage(commandErrorText(title, message), 'Show Output').then((choice) => {
        if (choice) output?.show(true);
      });
    }
    return undefined;
  } finally {
    sub.dispose();
    cancel.dispose();
    status.job = undefined;
    showStatus();
  }
}

// ---- starting the daemon ----

/** Where kblaster.path's value comes from, as the Settings editor names the scope. */
function pathScope(): SettingScope {
  const inspected = vscode.workspace.getConfiguration(section).inspect<string>('path');
  if (inspected?.workspaceFolderValue !== undefined) return 'folder';
  if (inspected?.workspaceValue !== undefined) return 'workspace';
  if (inspected?.globalValue !== undefined) return 'user';
  return 'default';
}

/** The daemon's command as kblaster.path gives it: a relative path with a slash is relative to
 *  the first workspace folder, as users expect from "./build/cli/kblaster" in a workspace setting. */
function daemonCommand(): string {
  const config = vscode.workspace.getConfiguration(section);
  const command = config.get<string>('path', 'kblaster').trim() || 'kblaster';
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (command.includes('/') && !path.isAbsolute(command) && folder) return path.join(folder.uri.fsPath, command);
  return command;
}

/** Why `command` cannot be started, or undefined when it is an executable file (looked up on
 *  PATH when it has no slash). */
function notExecutable(command: string): string | undefined {
  const executable = (file: string) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/')) return executable(command) ? undefined : fs.existsSync(command) ? 'is not an executable file' : 'does not exist';
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  return dirs.some((d) => executable(path.join(d, command))) ? undefined : 'was not found on PATH';
}

/** The daemon's command line: `kblaster.path serve <kblaster.arguments>`. The log level travels
 *  in initializationOptions, so that the command line holds only options every daemon knows. */
function serverOptions(command: string): ServerOptions {
  const config = vscode.workspace.getConfiguration(section);
  const folder = vscode.workspace.workspaceFolders?.[0];
  const args = ['serve', ...config.get<string[]>('arguments', [])];
  return { command, args, transport: TransportKind.stdio, options: { cwd: folder?.uri.fsPath } };
}

/** One start of the daemon: whether it ever answered, and the restarts since. */
interface Lifetime {
  command: string;
  answered: boolean;
  reported: boolean;
  restarts: number[];
}

/** Says once per start that the daemon did not start, naming kblaster.path and where it is set. */
function reportStartFailure(life: Lifetime, why: string): void {
  if (life.reported) return;
  life.reported = true;
  status.daemon = 'stopped';
  status.failure = `the daemon did not start: ${life.command} ${why}`;
  showStatus();
  void showAdvice(startFailureAdvice(life.command, pathScope(), why));
}

function clientOptions(life: Lifetime): LanguageClientOptions {
  return {
    // VS Code calls CUDA `cuda-cpp`; `cuda` is what other extensions sometimes register.
    documentSelector: [
      { scheme: 'file', language: 'cuda-cpp' },
      { scheme: 'file', language: 'cuda' },
      { scheme: 'untitled', language: 'cuda-cpp' },
    ],
    initializationOptions: initializationOptions(daemonSettings(), vscode.workspace.isTrusted),
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    synchronize: { configurationSection: section },
    initializationFailedHandler: () => false,
    errorHandler: {
      error: (_error, _message, count) => ({ action: count && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true }),
      closed: () => {
        // A program that ends before answering is not the daemon: restarting it five times
        // only repeats that. Said once, naming the setting.
        if (!life.answered) {
          reportStartFailure(life, 'ended before answering');
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        const now = Date.now();
        life.restarts = [...life.restarts.filter((t) => now - t < 3 * 60 * 1000), now];
        if (life.restarts.length <= 4) return { action: CloseAction.Restart, handled: true };
        status.failure = `the daemon stopped ${life.restarts.length} times in 3 minutes`;
        void showAdvice(crashAdvice(life.command, life.restarts.length));
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
    middleware: {
      // Code lenses and code actions name these commands; run them with status-bar progress.
      executeCommand: async (command, args, next) => (longCommands.has(command) ? runLongCommand(command, args)
        : command === 'kblaster.createTask' ? createTask((args[0] ?? {}) as Context['args'], async () => next(command, args))
          : next(command, args)),
    },
  };
}

/** The daemon's command line as the settings give it now, to compare with the running one's. */
function commandLine(): string {
  return JSON.stringify([daemonCommand(), vscode.workspace.getConfiguration(section).get<string[]>('arguments', [])]);
}
let startedWith = '';

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const command = daemonCommand();
  startedWith = commandLine();
  const life: Lifetime = { command, answered: false, reported: false, restarts: [] };
  status.machine = undefined;
  status.failure = undefined;
  const missing = notExecutable(command);
  if (missing) {
    reportStartFailure(life, missing);
    return;
  }
  client = new KblasterClient(section, 'KernelBlaster', serverOptions(command), clientOptions(life));
  client.onDidChangeState((event) => {
    status.daemon = event.newState === State.Running ? 'running' : event.newState === State.Starting ? 'starting' : 'stopped';
    if (event.newState === State.Running) {
      life.answered = true;
      status.failure = undefined;
      void refreshMachineStatus();
    }
    showStatus();
  });
  status.daemon = 'starting';
  showStatus();
  try {
    await client.start();
  } catch (error) {
    output?.appendLine(`${command} serve did not answer initialize: ${error instanceof Error ? error.message : String(error)}`);
    reportStartFailure(life, 'did not answer as the daemon (see the output)');
    return;
  }
  context.subscriptions.push({ dispose: () => stopQuietly(client) });
}

/** Stops `c` when it runs: a client whose start failed, or that stopped, throws "Client is not
 *  running and can't be stopped" (a stack trace in the output) if asked. */
async function stopQuietly(c: LanguageClient | undefined): Promise<void> {
  if (!c || !c.isRunning()) return;
  await c.stop().catch(() => undefined);
}

// Restarts one at a time: trust and a settings change can ask at once.
let restarting: Promise<void> = Promise.resolve();

function restartClient(context: vscode.ExtensionContext): Promise<void> {
  restarting = restarting.then(async () => {
    await stopQuietly(client);
    client = undefined;
    await startClient(context);
  });
  return restarting;
}

/** Restarts the daemon when its command line is no longer the one it was started with (a
 *  settings change, or trust bringing the workspace's own kblaster.path into force). */
async function restartIfChanged(context: vscode.ExtensionContext): Promise<void> {
  await restarting;
  if (commandLine() !== startedWith) await restartClient(context);
}

/** Lets the user pick the kblaster executable and writes kblaster.path where it was set (a
 *  workspace value would hide a user one); the change restarts the daemon. */
async function chooseExecutable(): Promise<void> {
  const picked = await vscode.window.showOpenDialog({
    title: 'Choose the kblaster executable', openLabel: 'Use as kblaster', canSelectFiles: true, canSelectFolders: false,
    canSelectMany: false,
  });
  if (!picked?.[0]) return;
  const scope = pathScope();
  const target = scope === 'folder' ? vscode.ConfigurationTarget.WorkspaceFolder
    : scope === 'workspace' ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration(section, vscode.workspace.workspaceFolders?.[0]?.uri).update('path', picked[0].fsPath, target);
}

/** Runs the daemon's self-test; the progress notification and its Cancel button come from
 *  the server's work-done progress, handled by vscode-languageclient. */
async function runSelfTest(): Promise<void> {
  if (!client || client.state !== State.Running) {
    void vscode.window.showWarningMessage('The KernelBlaster daemon is not running.', 'Restart').then((choice) => {
      if (choice) void vscode.commands.executeCommand('kblaster.restartServer');
    });
    return;
  }
  try {
    const result = await client.sendRequest(ExecuteCommandRequest.type, {
      command: 'kblaster.selfTest',
      arguments: [{ steps: 20, stepMs: 100 }],
    });
    void vscode.window.showInformationMessage(selfTestText(result));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    void vscode.window.showErrorMessage(`Self-test failed: ${message}`);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('KernelBlaster');
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.trusted = vscode.workspace.isTrusted;
  showStatus();
  // The daemon's kernel commands, for the palette: the kernel is the one whose definition holds
  // the cursor (or a launch of which it is on), as the daemon finds it (kblaster/kernelAt), not
  // the word under the cursor (`threadIdx`, `x`). Outside any kernel the user is told so;
  // Profile File needs no kernel and goes on for the whole file.
  const onKernel = (command: string, needsKernel = true) => async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || !client) return;
    const uri = editor.document.uri.toString();
    const at = await client.sendRequest<{ kernel: string | null; message?: string }>('kblaster/kernelAt', {
      textDocument: { uri },
      position: client.code2ProtocolConverter.asPosition(editor.selection.active),
    }).catch(() => ({ kernel: null, message: undefined }));
    if (!at.kernel && needsKernel) {
      void vscode.window.showInformationMessage(at.message ?? 'The cursor is not inside a __global__ kernel.');
      return;
    }
    await vscode.commands.executeCommand(command, { uri, kernel: at.kernel ?? '' });
  };
  context.subscriptions.push(
      output,
      statusItem,
      vscode.commands.registerCommand('kblaster.optimizeKernelAtCursor', onKernel('kblaster.optimize')),
      vscode.commands.registerCommand('kblaster.profileFile', onKernel('kblaster.profile', false)),
      vscode.commands.registerCommand('kblaster.createTaskAtCursor', onKernel('kblaster.createTask')),
      vscode.commands.registerCommand('kblaster.restartServer', () => restartClient(context)),
      vscode.commands.registerCommand('kblaster.showOutput', () => output?.show(true)),
      vscode.commands.registerCommand('kblaster.runSelfTest', runSelfTest),
      vscode.commands.registerCommand('kblaster.chooseExecutable', chooseExecutable),
      // The stopped daemon's status item: why, and the choice of executable or a restart.
      vscode.commands.registerCommand('kblaster.daemonStopped', () => showAdvice(stoppedAdvice(daemonCommand(), status.failure))),
      // The command line depends on these settings, so a change needs a new daemon; the
      // others reach the running daemon through workspace/didChangeConfiguration.
      // Trust is granted once per window (withdrawing it reloads the window): the running daemon
      // may profile on the next save and optimize from now on. A daemon that did not start
      // (trust can bring the workspace's own kblaster.path into force) is started again.
      vscode.workspace.onDidGrantWorkspaceTrust(async () => {
        status.trusted = true;
        showStatus();
        // A daemon still starting got isTrusted in its initializationOptions already, or gets
        // this once it runs (the library queues it); a stopped one is told at its next start.
        if (client && client.state !== State.Stopped) {
          client.sendNotification(setTrustNotification, { trusted: true }).catch(() => undefined);
        }
        await restartIfChanged(context);
      }),
      vscode.workspace.onDidChangeConfiguration(async (event) => {
        if (event.affectsConfiguration('kblaster.path') || event.affectsConfiguration('kblaster.arguments')) {
          await restartIfChanged(context);
        } else if (event.affectsConfiguration('kblaster.optimize.replayHarness')) {
          // The tooltip says whether Optimize replays; asked once the setting has reached the
          // daemon (a notification, served in order; the request is not).
          setTimeout(() => void refreshMachineStatus(), 500);
        }
      }));
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  await stopQuietly(client);
  client = undefined;
}
