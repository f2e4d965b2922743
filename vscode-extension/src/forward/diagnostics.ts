/**
 * Everyone's diagnostics → `livingMemory/diagnosticsChanged` (a language server cannot see
 * other servers' diagnostics). Debounced per burst; a file is sent only when what it would
 * send differs from what was sent last; our own diagnostics are left out.
 */
import * as vscode from 'vscode';
import type { NotificationSender } from '../client/serverManager';
import { forwardable } from '../protocol/diagnostics';
import { diagnosticsChanged } from '../protocol/notifications';
import { KeyedBatcher } from '../util/debounce';

export const DIAGNOSTICS_DELAY_MS = 250;
export const DIAGNOSTICS_MAX_WAIT_MS = 2000;
/** At most this many files are sent when the server (re)starts (it keeps as many). */
export const RESYNC_MAX_FILES = 500;

export class DiagnosticsForwarder implements vscode.Disposable {
  private readonly sent = new Map<string, string>();
  private readonly batcher: KeyedBatcher<string>;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly sender: NotificationSender) {
    this.batcher = new KeyedBatcher((uris) => {
      this.flush(uris);
    }, { delayMs: DIAGNOSTICS_DELAY_MS, maxWaitMs: DIAGNOSTICS_MAX_WAIT_MS });
    this.subscription = vscode.languages.onDidChangeDiagnostics((e) => {
      this.batcher.add(...e.uris.filter((u) => u.scheme === 'file').map((u) => u.toString()));
    });
  }

  /** The server (re)started: send every file that has diagnostics. */
  resync(): void {
    this.sent.clear();
    const uris = vscode.languages
      .getDiagnostics()
      .filter(([uri, diagnostics]) => uri.scheme === 'file' && diagnostics.length > 0)
      .map(([uri]) => uri.toString())
      .slice(0, RESYNC_MAX_FILES);
    if (uris.length > 0) {
      this.batcher.add(...uris);
    }
  }

  private flush(uris: string[]): void {
    for (const uri of uris) {
      const diagnostics = forwardable(vscode.languages.getDiagnostics(vscode.Uri.parse(uri)));
      const body = JSON.stringify(diagnostics);
      if (diagnostics.length === 0 && !this.sent.has(uri)) {
        continue; // nothing was reported for it: nothing to clear
      }
      if (this.sent.get(uri) === body) {
        continue;
      }
      if (diagnostics.length === 0) {
        this.sent.delete(uri);
      } else {
        this.sent.set(uri, body);
      }
      this.sender.notify(diagnosticsChanged, { uri, diagnostics });
    }
  }

  dispose(): void {
    this.batcher.dispose();
    this.subscription.dispose();
  }
}
