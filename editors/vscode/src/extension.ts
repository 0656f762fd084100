// Starts `oomlint server` for Python files: diagnostics with their measured cost, quick
// fixes, fix-all and hovers all come from the server; this file only finds the binary,
// passes the settings on, and says so when the server cannot start.

import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, State } from "vscode-languageclient/node";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let status: vscode.StatusBarItem;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("oomlint");
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left);
  status.command = "oomlint.showOutput";
  context.subscriptions.push(
    output,
    status,
    vscode.commands.registerCommand("oomlint.restart", () => restart(context)),
    vscode.commands.registerCommand("oomlint.showOutput", () => output.show()),
    vscode.commands.registerCommand("oomlint.openSnapshot", openSnapshot),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // select / ignore / enable / preview reach the running server; a new binary needs a restart.
      if (event.affectsConfiguration("oomlint.path")) {
        void restart(context);
      }
    }),
  );
  await start(context);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}

async function restart(context: vscode.ExtensionContext): Promise<void> {
  const running = client;
  client = undefined;
  try {
    await running?.stop();
  } catch (error) {
    output.appendLine(`stopping the server failed: ${error}`);
  }
  await start(context);
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  const binary = findBinary(context);
  if (!binary) {
    failed("no oomlint binary: set `oomlint.path`, put `oomlint` on PATH, or install the extension that bundles it");
    return;
  }
  if (!isExecutable(binary)) {
    failed(`the oomlint server failed to start: \`oomlint.path\` (${binary}) is not an executable file`);
    return;
  }
  output.appendLine(`starting ${binary} server`);
  const serverOptions: ServerOptions = { command: binary, args: ["server"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ],
    initializationOptions: { oomlint: clientSettings() },
    // Sends `workspace/didChangeConfiguration` with the `oomlint` section on each change.
    synchronize: { configurationSection: "oomlint" },
    outputChannel: output,
  };
  const started = new LanguageClient("oomlint", "oomlint", serverOptions, clientOptions);
  started.onDidChangeState((event) => {
    // A server that ran and then stopped (crashed, killed); a failed start is reported below.
    if (event.oldState === State.Running && event.newState === State.Stopped && client === started) {
      failed("the oomlint server stopped");
    }
  });
  client = started;
  try {
    await started.start();
    status.hide();
  } catch (error) {
    failed(`the oomlint server (${binary}) failed to start: ${error}`);
  }
}

/** What the server reads from the client: the `oomlint` settings it understands. */
function clientSettings(): Record<string, unknown> {
  const settings = vscode.workspace.getConfiguration("oomlint");
  const result: Record<string, unknown> = {
    enable: settings.get<boolean>("enable", true),
    ignore: settings.get<string[]>("ignore", []),
  };
  const select = settings.get<string[] | null>("select", null);
  if (select) {
    result.select = select;
  }
  const preview = settings.get<boolean | null>("preview", null);
  if (preview !== null) {
    result.preview = preview;
  }
  const snapshot = settings.get<string>("snapshot", "");
  if (snapshot) {
    result.snapshot = snapshot;
  }
  return result;
}

/** Pick a memory snapshot and have the server show it (its `oomlint.showSnapshot` command). */
async function openSnapshot(): Promise<void> {
  const picked = await vscode.window.showOpenDialog({
    canSelectMany: false,
    filters: { "Memory snapshots": ["pickle", "pkl"] },
    openLabel: "Show memory snapshot",
  });
  if (picked?.[0]) {
    await vscode.commands.executeCommand("oomlint.showSnapshot", picked[0].fsPath);
  }
}

/** `oomlint.path`, else `oomlint` on PATH, else the binary bundled in the extension. */
function findBinary(context: vscode.ExtensionContext): string | undefined {
  const name = process.platform === "win32" ? "oomlint.exe" : "oomlint";
  const configured = vscode.workspace.getConfiguration("oomlint").get<string>("path", "");
  if (configured) {
    return configured.replace(/^~(?=$|\/)/, process.env.HOME ?? "~");
  }
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && isExecutable(candidate)) {
      return candidate;
    }
  }
  const bundled = context.asAbsolutePath(path.join("bin", name));
  if (fs.existsSync(bundled) && !isExecutable(bundled)) {
    // Some .vsix extractions drop the executable bit.
    try {
      fs.chmodSync(bundled, 0o755);
    } catch (error) {
      output.appendLine(`cannot make ${bundled} executable: ${error}`);
    }
  }
  return isExecutable(bundled) ? bundled : undefined;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function failed(message: string): void {
  output.appendLine(message);
  status.text = "$(error) oomlint";
  status.tooltip = `${message} (click for the log)`;
  status.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
  status.show();
  void vscode.window.showErrorMessage(message, "Show Log").then((choice) => {
    if (choice) {
      output.show();
    }
  });
}
