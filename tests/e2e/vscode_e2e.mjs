// The VS Code extension in a real VS Code: code-server with the packaged .vsix installed
// (and no oomlint on PATH, so the bundled binary runs), driven headless through
// playwright-core in Debian's Chromium. Opens a workspace with a leaky validation loop,
// shows a memory snapshot of it as inlay hints and a hover, waits for the OOM001 finding in
// the Problems panel, runs its quick fix from the light-bulb menu, saves, and checks the
// file on disk. Screenshots go to OUT_DIR.
//
// Usage: node tests/e2e/vscode_e2e.mjs CODE_SERVER_DIR EXTENSION.vsix OUT_DIR

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

const [codeServerDir, vsix, outDir] = process.argv.slice(2);
if (!codeServerDir || !vsix || !outDir) {
  console.error("usage: node vscode_e2e.mjs CODE_SERVER_DIR EXTENSION.vsix OUT_DIR");
  process.exit(2);
}
const { chromium } = createRequire(path.join(codeServerDir, "package.json"))("playwright-core");
const codeServer = path.join(codeServerDir, "node_modules/.bin/code-server");

const LEAKY = `import torch


def validate(model, loader, criterion):
    losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        losses.append(loss)
    return losses
`;

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "oomlint-vscode-"));
const workspace = path.join(scratch, "workspace");
const userData = path.join(scratch, "user-data");
const extensions = path.join(scratch, "extensions");
fs.mkdirSync(path.join(userData, "User"), { recursive: true });
fs.mkdirSync(workspace, { recursive: true });
fs.mkdirSync(outDir, { recursive: true });
const script = path.join(workspace, "validate.py");
fs.writeFileSync(script, LEAKY);
// A CUDA memory snapshot of that script in the allocator's documented layout (a pickle of
// plain dicts, written by the stdlib's pickle): 96 MiB live at the peak held by the
// `loss = ...` line, 32 MiB by the `append`.
const MiB = 1024 * 1024;
const framesAt = (line) => [
  { filename: "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line: 1751, name: "_call_impl" },
  { filename: script, line, name: "validate" },
];
const snapshot = {
  segments: [{
    device: 0, address: 0x10000000, total_size: 128 * MiB, allocated_size: 128 * MiB, stream: 0,
    blocks: [
      { size: 96 * MiB, requested_size: 96 * MiB, state: "active_allocated", frames: framesAt(7) },
      { size: 32 * MiB, requested_size: 32 * MiB, state: "active_allocated", frames: framesAt(8) },
    ],
  }],
  device_traces: [[
    { action: "alloc", addr: 0x10000000, size: 96 * MiB, stream: 0, frames: framesAt(7) },
    { action: "alloc", addr: 0x10000000 + 96 * MiB, size: 32 * MiB, stream: 0, frames: framesAt(8) },
  ]],
};
const pickling = spawnSync(
  "python3",
  ["-c", "import json, pickle, sys; pickle.dump(json.load(sys.stdin), open(sys.argv[1], 'wb'))", path.join(workspace, "memory.pickle")],
  { input: JSON.stringify(snapshot), encoding: "utf8" },
);
if (pickling.status !== 0) throw new Error(`writing the snapshot failed: ${pickling.stderr}`);
// A notebook: the deprecated import in one cell, its use in the next.
const notebookCell = (source) => ({ cell_type: "code", execution_count: null, metadata: {}, outputs: [], source });
fs.writeFileSync(
  path.join(workspace, "explore.ipynb"),
  JSON.stringify({
    cells: [notebookCell("import torch\nfrom torch.cuda.amp import autocast"), notebookCell("with autocast():\n    y = torch.ones(2)")],
    metadata: { kernelspec: { language: "python", name: "python3" } },
    nbformat: 4,
    nbformat_minor: 5,
  }, null, 1),
);
fs.writeFileSync(
  path.join(userData, "User/settings.json"),
  JSON.stringify({
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "security.workspace.trust.enabled": false,
    "extensions.ignoreRecommendations": true,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "editor.lightbulb.enabled": "on",
    // The OOM001/OOM002 findings below may be preview rules: the extension's setting turns them on.
    "oomlint.preview": true,
    "oomlint.snapshot": "memory.pickle",
  }),
);
// No oomlint on PATH: the extension must fall back to the binary it bundles.
const env = {
  ...process.env,
  PATH: (process.env.PATH ?? "")
    .split(":")
    .filter((dir) => dir && !fs.existsSync(path.join(dir, "oomlint")))
    .join(":"),
};
const common = ["--user-data-dir", userData, "--extensions-dir", extensions];

function step(message) {
  console.log(`[vscode e2e] ${message}`);
}

async function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForHttp(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url);
      if (response.ok || response.status === 302) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`code-server did not answer at ${url}`);
}

async function poll(what, check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

let server;
let browser;
let page;
let failed = false;
try {
  step(`installing ${vsix}`);
  const install = spawnSync(codeServer, [...common, "--install-extension", vsix], { env, encoding: "utf8" });
  if (install.status !== 0) throw new Error(`--install-extension failed: ${install.stdout}${install.stderr}`);

  const port = await freePort();
  const log = fs.openSync(path.join(outDir, "code-server.log"), "w");
  server = spawn(
    codeServer,
    [
      ...common,
      "--auth", "none",
      "--bind-addr", `127.0.0.1:${port}`,
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      workspace,
    ],
    { env, stdio: ["ignore", log, log], detached: true },
  );
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;
  await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
  step("code-server is up");

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-background-networking", "--disable-dev-shm-usage"],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(url);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  step("workbench loaded");

  // Open the script through Quick Open.
  await page.locator(".monaco-workbench").click({ position: { x: 700, y: 450 } });
  await poll("Quick Open", async () => {
    await page.keyboard.press("Control+P");
    return page.locator(".quick-input-widget input").isVisible();
  }, 30_000);
  await page.keyboard.type("validate.py");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "validate.py" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".monaco-editor .view-lines", { hasText: "losses.append(loss)" }).waitFor({ timeout: 30_000 });
  step("script open");

  // The snapshot's heaviest lines carry inlay hints at their ends; the hover breaks one down.
  const hint = page.locator(".monaco-editor .view-lines", { hasText: "96.00 MiB at peak" });
  await hint.waitFor({ timeout: 60_000 });
  // Editors render spaces as non-breaking ones.
  const shown = (await page.locator(".monaco-editor .view-lines").innerText()).replace(/\s+/g, " ");
  if (!shown.includes("32.00 MiB at peak")) throw new Error(`the append line has no hint:\n${shown}`);
  await page.keyboard.press("Control+G");
  await page.keyboard.type("7:10");
  await page.keyboard.press("Enter");
  const hover = page.locator(".monaco-hover", { hasText: "at peak" });
  await poll("the snapshot hover", async () => {
    await page.keyboard.press("Control+K");
    await page.keyboard.press("Control+I");
    await page.waitForTimeout(500);
    return hover.first().isVisible();
  }, 30_000);
  const hoverText = (await hover.first().innerText()).replace(/\s+/g, " ");
  if (!hoverText.includes("96.00 MiB") || !hoverText.includes("validate")) throw new Error(`unexpected hover: ${hoverText}`);
  await page.screenshot({ path: path.join(outDir, "vscode-snapshot-hints.png") });
  await page.keyboard.press("Escape");
  step("the snapshot shows as inlay hints and a hover");

  // The finding in the Problems panel.
  await page.keyboard.press("Control+Shift+M");
  const problem = page.locator(".markers-panel .monaco-list-row", { hasText: "OOM001" }).first();
  await problem.waitFor({ timeout: 60_000 });
  const problemText = await page.locator(".markers-panel").innerText();
  if (!problemText.includes("with its autograd graph")) throw new Error(`unexpected problem text: ${problemText}`);
  await page.screenshot({ path: path.join(outDir, "vscode-problem.png") });
  step("OOM001 is in the Problems panel");

  // Quick fix: go to the finding, open the code action menu, pick oomlint's fix.
  await problem.click();
  await problem.dblclick();
  await page.waitForTimeout(500);
  const fixItem = page.locator(".action-widget .monaco-list-row", { hasText: "Store `loss.item()`" }).first();
  await poll("the quick fix menu", async () => {
    await page.keyboard.press("Control+.");
    await page.waitForTimeout(500);
    return fixItem.isVisible();
  }, 30_000);
  await page.screenshot({ path: path.join(outDir, "vscode-quick-fix.png") });
  // The menu takes the keyboard (a pointer block covers it): move to the fix, press Enter.
  const focused = page.locator(".action-widget .monaco-list-row.focused");
  await poll("the fix to be focused in the menu", async () => {
    if ((await focused.innerText()).includes("Store `loss.item()`")) return true;
    await page.keyboard.press("ArrowDown");
    return false;
  }, 10_000);
  await page.keyboard.press("Enter");
  await page.locator(".monaco-editor .view-lines", { hasText: "losses.append(loss.item())" }).waitFor();
  await page.keyboard.press("Control+S");
  await poll("the fixed file on disk", async () => fs.readFileSync(script, "utf8").includes("losses.append(loss.item())"), 20_000);
  const fixed = fs.readFileSync(script, "utf8");
  if (fixed !== LEAKY.replace("losses.append(loss)", "losses.append(loss.item())")) {
    throw new Error(`unexpected file after the fix:\n${fixed}`);
  }
  await poll("the finding to clear", async () => (await problem.count()) === 0, 30_000);
  await page.screenshot({ path: path.join(outDir, "vscode-fixed.png") });
  step("quick fix applied, saved, and the finding cleared");
  // The fixed line no longer matches the snapshot: its hint goes, the other line's stays.
  await poll("the fixed line's hint to go", async () => {
    const text = (await page.locator(".monaco-editor .view-lines").innerText()).replace(/\s+/g, " ");
    return text.includes("96.00 MiB at peak") && !text.includes("32.00 MiB at peak");
  }, 30_000);
  step("the edited line's snapshot hint went");

  // A notebook: its cells are linted together, the finding shows on the cell that uses
  // what another cell imported.
  await poll("Quick Open", async () => {
    await page.keyboard.press("Control+P");
    return page.locator(".quick-input-widget input").isVisible();
  }, 30_000);
  await page.keyboard.type("explore.ipynb");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "explore.ipynb" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".notebook-editor", { hasText: "with autocast" }).first().waitFor({ timeout: 60_000 });
  await page.keyboard.press("Control+Shift+M");
  await page.locator(".markers-panel .monaco-list-row", { hasText: "OOM003" }).first().waitFor({ timeout: 60_000 });
  await page.screenshot({ path: path.join(outDir, "vscode-notebook.png") });
  step("OOM003 is reported in the notebook");

  // A binary that does not exist: the extension restarts on the setting and says so.
  const workspaceSettings = path.join(workspace, ".vscode/settings.json");
  fs.mkdirSync(path.dirname(workspaceSettings), { recursive: true });
  fs.writeFileSync(workspaceSettings, JSON.stringify({ "oomlint.path": "/nonexistent/oomlint" }));
  const failure = page.locator(".statusbar-item", { hasText: "oomlint" });
  await failure.first().waitFor({ timeout: 30_000 });
  await page.locator(".notifications-toasts", { hasText: "failed to start" }).waitFor({ timeout: 30_000 });
  await page.screenshot({ path: path.join(outDir, "vscode-start-failure.png") });
  step("a missing binary shows the failure in the status bar");

  // Back to the bundled binary, through the restart command.
  fs.writeFileSync(workspaceSettings, JSON.stringify({}));
  await page.waitForTimeout(1000);
  await page.keyboard.press("F1");
  await page.keyboard.type("oomlint: Restart Server");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: "Restart Server" }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".markers-panel .monaco-list-row", { hasText: "OOM002" }).first().waitFor({ timeout: 30_000 });
  await poll("the failure item to go", async () => !(await failure.first().isVisible()), 30_000);
  step("restarted: findings are back");
} catch (error) {
  failed = true;
  console.error(`[vscode e2e] FAILED: ${error.stack ?? error}`);
  if (page) await page.screenshot({ path: path.join(outDir, "vscode-failure.png") }).catch(() => {});
} finally {
  await browser?.close().catch(() => {});
  if (server) {
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {}
  }
  fs.rmSync(scratch, { recursive: true, force: true });
}
console.log(failed ? "vscode e2e: failed (screenshots and code-server.log in " + outDir + ")" : `vscode e2e: ok (screenshots in ${outDir})`);
process.exit(failed ? 1 : 0);
