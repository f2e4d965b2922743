/** "Install Living Memory server": the private environment, with progress and readable errors. */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CONFIG_SECTION } from '../ids';
import {
  configuredSource,
  ENV_DIR_NAME,
  InstallError,
  type InstallPlan,
  installPlan,
  NoInstallSource,
  runInstall,
} from '../python/install';
import { runProcess } from '../python/process';

export type Installer = (basePython: string) => Promise<boolean>;

export function createInstaller(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): Installer {
  const install: Installer = async (basePython) => {
    const storage = context.globalStorageUri.fsPath;
    const version = (context.extension.packageJSON as { version: string }).version;
    const setting = vscode.workspace.getConfiguration(CONFIG_SECTION).get<string>('serverInstallSource');
    let plan: InstallPlan;
    try {
      plan = installPlan({
        basePython,
        envDir: path.join(storage, ENV_DIR_NAME),
        version,
        source: configuredSource(setting, process.env),
      });
    } catch (e) {
      if (!(e instanceof NoInstallSource)) {
        throw e;
      }
      log.warn(`not installing the server: ${e.message}`);
      return (await askForSource(e.message)) ? install(basePython) : false;
    }
    log.info(`installing ${plan.requirement} into ${plan.envDir} with ${basePython} (extension ${version})`);
    const abort = new AbortController();
    try {
      await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: 'Installing the Living Memory server',
          cancellable: true,
        },
        async (progress, token) => {
          token.onCancellationRequested(() => {
            abort.abort();
          });
          let lastReport = 0;
          await runInstall(
            plan,
            runProcess,
            {
              step: (step, index, count) => {
                log.info(`[${index + 1}/${count}] ${step.title}: ${step.command} ${step.args.join(' ')}`);
                progress.report({ message: `${step.title}…`, increment: index === 0 ? 5 : 10 });
              },
              line: (line) => {
                log.info(line);
                const now = Date.now();
                if (now - lastReport > 500 && line.trim() !== '') {
                  lastReport = now;
                  progress.report({ message: line.trim().slice(0, 100) });
                }
              },
            },
            { cwd: storage, signal: abort.signal },
          );
        },
      );
    } catch (e) {
      if (abort.signal.aborted) {
        log.warn('installing the server was cancelled');
        void vscode.window.showInformationMessage('Installing the Living Memory server was cancelled.');
        return false;
      }
      const message = e instanceof InstallError ? e.message : e instanceof Error ? e.message : String(e);
      log.error(`installing the server failed: ${message}`);
      void vscode.window
        .showErrorMessage(
          `Installing the Living Memory server failed. ${message}. ` +
            'To install from a local wheel or checkout, set livingMemory.serverInstallSource.',
          'Show Log',
          'Open Settings',
        )
        .then((answer) => {
          if (answer === 'Show Log') {
            log.show();
          } else if (answer === 'Open Settings') {
            void vscode.commands.executeCommand(
              'workbench.action.openSettings',
              `${CONFIG_SECTION}.serverInstallSource`,
            );
          }
        });
      return false;
    }
    log.info(`installed ${plan.requirement}`);
    void vscode.window.showInformationMessage(`Living Memory server installed (${plan.requirement}).`);
    return true;
  };
  return install;
}

const CHOOSE = 'Choose Wheel or Folder…';

/** Tells why nothing was installed and lets the user name a wheel or checkout; true once the
 * setting holds the chosen one. */
async function askForSource(message: string): Promise<boolean> {
  const answer = await vscode.window.showWarningMessage(`Living Memory: ${message}`, CHOOSE, 'Open Settings');
  if (answer === 'Open Settings') {
    await vscode.commands.executeCommand('workbench.action.openSettings', `${CONFIG_SECTION}.serverInstallSource`);
    return false;
  }
  if (answer !== CHOOSE) {
    return false;
  }
  const picked = await vscode.window.showOpenDialog({
    canSelectFiles: true,
    canSelectFolders: true,
    canSelectMany: false,
    title: 'A Living Memory wheel, source archive or checkout folder',
    filters: { 'Wheel or archive': ['whl', 'gz', 'tgz', 'zip'] },
  });
  const chosen = picked?.[0]?.fsPath;
  if (!chosen) {
    return false;
  }
  await vscode.workspace
    .getConfiguration(CONFIG_SECTION)
    .update('serverInstallSource', chosen, vscode.ConfigurationTarget.Global);
  return true;
}
