// KernelBlaster for VS Code: starts `kblaster serve` for CUDA files and wires it to VS Code
// through vscode-languageclient (document symbols, hover, progress and cancellation all come
// from the library; this file only finds the daemon, passes settings and adds commands).
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
} from 'vscode-languageclient/node';

const section = 'kblaster';
let client: LanguageClient | undefined;
let output: vscode.OutputChannel | undefined;

/** The settings the daemon reads, as sent in initializationOptions and on every change. */
function daemonSettings(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(section);
  return {
    logLevel: config.get<string>('logLevel', 'info'),
    knowledgeBase: config.get<string>('knowledgeBase', ''),
    llm: {
      endpoint: config.get<string>('llm.endpoint', ''),
      model: config.get<string>('llm.model', ''),
      apiKeyEnv: config.get<string>('llm.apiKeyEnv', ''),
    },
  };
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
    initializationOptions: daemonSettings(),
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    synchronize: { configurationSection: section },
  };
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  client = new LanguageClient(section, 'KernelBlaster', serverOptions(), clientOptions());
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
  context.subscriptions.push(
      output,
      vscode.commands.registerCommand('kblaster.restartServer', () => restartClient(context)),
      vscode.commands.registerCommand('kblaster.showOutput', () => output?.show(true)),
      vscode.commands.registerCommand('kblaster.runSelfTest', runSelfTest),
      // The command line depends on these settings, so a change needs a new daemon; the
      // others reach the running daemon through workspace/didChangeConfiguration.
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
