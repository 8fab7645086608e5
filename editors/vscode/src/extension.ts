// KernelBlaster for VS Code: starts `kblaster serve` for CUDA files and wires it to VS Code
// through vscode-languageclient (diagnostics, hover, code lenses, code actions, edits, progress
// and cancellation come from the library; this file finds the daemon, passes settings and the
// workspace's trust, shows the daemon and its jobs in the status bar, and adds commands).
// In an untrusted workspace (package.json: untrustedWorkspaces "limited") the daemon is told so
// and runs nothing of the workspace's until the user grants trust, which it is then told too.
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  TransportKind,
  WorkDoneProgress,
} from 'vscode-languageclient/node';
import { daemonSettings as mapSettings, initializationOptions, setTrustNotification, StatusInput, statusText } from './settings';

const section = 'kblaster';
let client: LanguageClient | undefined;
let output: vscode.OutputChannel | undefined;
let statusItem: vscode.StatusBarItem | undefined;
const status: StatusInput = { daemon: 'stopped' };
let nextJob = 1;

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
  statusItem.command = status.daemon === 'stopped' ? 'kblaster.restartServer' : 'kblaster.showOutput';
  statusItem.show();
}

// Long commands the daemon runs with work-done progress: sent with our own token so that the
// status bar can follow the percentage (the notification with its Cancel button comes too).
const longCommands = new Set(['kblaster.optimize', 'kblaster.applyTechnique', 'kblaster.profile']);

async function runLongCommand(command: string, args: unknown[]): Promise<unknown> {
  if (!client) return undefined;
  const token = `kblaster-vscode-${nextJob++}`;
  const kernel = (args[0] as { kernel?: string } | undefined)?.kernel ?? '';
  const title = `${command.replace('kblaster.', '')} ${kernel}`.trim();
  return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `KernelBlaster: ${title}`, cancellable: true },
      async (progress, cancel) => {
        let last = 0;
        const sub = client!.onProgress(WorkDoneProgress.type, token, (value) => {
          if (value.kind === 'end') return;
          const pct = value.percentage ?? last;
          progress.report({ message: value.message, increment: Math.max(0, pct - last) });
          last = pct;
          status.job = { title, percentage: pct, message: value.message };
          showStatus();
        });
        status.job = { title };
        showStatus();
        try {
          const result = await client!.sendRequest(ExecuteCommandRequest.type,
              { command, arguments: args, workDoneToken: token }, cancel);
          const report = (result as { reportPath?: string } | null)?.reportPath;
          if (report) {
            // One message for the end of a run, with the report a click away.
            const r = result as { bestSpeedup?: number; replayed?: boolean };
            const speed = typeof r.bestSpeedup === 'number' ? `: ${r.bestSpeedup.toFixed(2)}x measured${r.replayed ? ' (replayed)' : ''}` : '';
            void vscode.window.showInformationMessage(`KernelBlaster: ${title} done${speed} (report: ${report})`, 'Open Report')
                .then((choice) => {
                  if (choice) void vscode.window.showTextDocument(vscode.Uri.file(report));
                });
          }
          return result;
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          if (!cancel.isCancellationRequested) {
            // The daemon refuses to run an untrusted workspace's code: offer the way to trust it.
            const trustIt = vscode.workspace.isTrusted ? [] : ['Manage Workspace Trust'];
            void vscode.window.showErrorMessage(`KernelBlaster ${title}: ${message}`, ...trustIt).then((choice) => {
              if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
            });
          }
          return undefined;
        } finally {
          sub.dispose();
          status.job = undefined;
          showStatus();
        }
      });
}

/** The daemon's command line: `kblaster.path serve <kblaster.arguments>`. The log level travels
 *  in initializationOptions, so that the command line holds only options every daemon knows. */
function serverOptions(): ServerOptions {
  const config = vscode.workspace.getConfiguration(section);
  let command = config.get<string>('path', 'kblaster').trim() || 'kblaster';
  // A relative path with a slash is relative to the first workspace folder, as users expect
  // from "./build/cli/kblaster" in a workspace setting.
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (command.includes('/') && !path.isAbsolute(command) && folder) {
    command = path.join(folder.uri.fsPath, command);
  }
  const args = ['serve', ...config.get<string[]>('arguments', [])];
  return { command, args, transport: TransportKind.stdio, options: { cwd: folder?.uri.fsPath } };
}

function clientOptions(): LanguageClientOptions {
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
    middleware: {
      // Code lenses and code actions name these commands; run them with status-bar progress.
      executeCommand: async (command, args, next) => (longCommands.has(command) ? runLongCommand(command, args) : next(command, args)),
    },
  };
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  client = new LanguageClient(section, 'KernelBlaster', serverOptions(), clientOptions());
  client.onDidChangeState((event) => {
    status.daemon = event.newState === State.Running ? 'running' : event.newState === State.Starting ? 'starting' : 'stopped';
    showStatus();
  });
  status.daemon = 'starting';
  showStatus();
  try {
    await client.start();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const choice = await vscode.window.showErrorMessage(
        `KernelBlaster: could not start the daemon (${message}). Check the "kblaster.path" setting.`,
        'Open Settings');
    if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'kblaster.path');
    }
    return;
  }
  context.subscriptions.push({ dispose: () => void client?.stop() });
}

async function restartClient(context: vscode.ExtensionContext): Promise<void> {
  if (client && client.state !== State.Stopped) {
    await client.stop();
  }
  client = undefined;
  await startClient(context);
}

/** Runs the daemon's self-test; the progress notification and its Cancel button come from
 *  the server's work-done progress, handled by vscode-languageclient. */
async function runSelfTest(): Promise<void> {
  if (!client || client.state !== State.Running) {
    void vscode.window.showWarningMessage('KernelBlaster: the daemon is not running.');
    return;
  }
  try {
    const result = await client.sendRequest(ExecuteCommandRequest.type, {
      command: 'kblaster.selfTest',
      arguments: [{ steps: 20, stepMs: 100 }],
    });
    void vscode.window.showInformationMessage(`KernelBlaster self-test: ${JSON.stringify(result)}`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    void vscode.window.showErrorMessage(`KernelBlaster self-test failed: ${message}`);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('KernelBlaster');
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.trusted = vscode.workspace.isTrusted;
  showStatus();
  // The daemon's kernel commands, for the palette: the kernel is the word under the cursor.
  const onKernel = (command: string) => async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || !client) return;
    const range = editor.document.getWordRangeAtPosition(editor.selection.active);
    const kernel = range ? editor.document.getText(range) : '';
    await vscode.commands.executeCommand(command, { uri: editor.document.uri.toString(), kernel });
  };
  context.subscriptions.push(
      output,
      statusItem,
      vscode.commands.registerCommand('kblaster.optimizeKernelAtCursor', onKernel('kblaster.optimize')),
      vscode.commands.registerCommand('kblaster.profileFile', onKernel('kblaster.profile')),
      vscode.commands.registerCommand('kblaster.createTaskAtCursor', onKernel('kblaster.createTask')),
      vscode.commands.registerCommand('kblaster.restartServer', () => restartClient(context)),
      vscode.commands.registerCommand('kblaster.showOutput', () => output?.show(true)),
      vscode.commands.registerCommand('kblaster.runSelfTest', runSelfTest),
      // The command line depends on these settings, so a change needs a new daemon; the
      // others reach the running daemon through workspace/didChangeConfiguration.
      // Trust is granted once per window (withdrawing it reloads the window): the running daemon
      // may profile on the next save and optimize from now on.
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        status.trusted = true;
        showStatus();
        // A daemon still starting got isTrusted in its initializationOptions already, or gets
        // this once it runs (the library queues it); a stopped one is told at its next start.
        if (client && client.state !== State.Stopped) {
          client.sendNotification(setTrustNotification, { trusted: true }).catch(() => undefined);
        }
      }),
      vscode.workspace.onDidChangeConfiguration(async (event) => {
        if (event.affectsConfiguration('kblaster.path') || event.affectsConfiguration('kblaster.arguments')) {
          await restartClient(context);
        }
      }));
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  if (client) {
    await client.stop();
    client = undefined;
  }
}
