/**
 * Long server jobs (ingest, consolidate) in a cancellable notification: the extension passes
 * its own work-done token, shows the server's `$/progress` on it, and cancels the request
 * when the user presses Cancel (the server stops at its next checkpoint; what it committed
 * stays).
 */
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import type { ServerManager } from '../client/serverManager';
import type { CallOptions } from '../protocol/api';

export async function runJob<R>(
  manager: ServerManager,
  title: string,
  body: (options: CallOptions) => Promise<R>,
): Promise<R> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title, cancellable: true },
    async (progress, token) => {
      const workDoneToken = `living-memory-${randomUUID()}`;
      let done = 0;
      const subscription = manager.onProgress(workDoneToken, (value) => {
        if (value.kind === 'end') {
          return;
        }
        const increment =
          value.percentage === undefined ? undefined : Math.max(0, value.percentage - done);
        if (value.percentage !== undefined) {
          done = Math.max(done, value.percentage);
        }
        progress.report({ message: value.message, increment });
      });
      try {
        return await body({ token, workDoneToken });
      } finally {
        subscription.dispose();
      }
    },
  );
}
