/**
 * Read-only Markdown documents (scheme `living-memory`), shown in the Markdown preview:
 * contexts are assembled again on every `livingMemory/contextUpdated`.
 */
import * as vscode from 'vscode';
import type { ServerManager } from '../client/serverManager';
import { DOCUMENT_SCHEME } from '../ids';
import { describeError } from '../protocol/errors';
import { parseRoute, routeLocation } from '../view/documentRoutes';
import type { ContextStore } from '../view/contextStore';
import type { DocumentRoute } from '../view/documentRoutes';
import { renderMemory, renderObject } from '../view/format';

const MAX_RESULTS = 20;

export class MemoryDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  private readonly results = new Map<string, string>();
  private counter = 0;
  private readonly registration: vscode.Disposable;

  readonly onDidChange = this.changeEmitter.event;

  constructor(
    private readonly manager: ServerManager,
    private readonly store?: ContextStore,
  ) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(DOCUMENT_SCHEME, this);
  }

  uriFor(route: DocumentRoute): vscode.Uri {
    const { path, query } = routeLocation(route);
    return vscode.Uri.from({ scheme: DOCUMENT_SCHEME, path, query });
  }

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const route = parseRoute(uri.path, uri.query);
    if (!route) {
      return `# Not found\n\n\`${uri.toString()}\` is not a Living Memory document.\n`;
    }
    try {
      return await this.render(route, token);
    } catch (e) {
      return `# Living Memory\n\n${describeError(e, 'Loading this document').message}\n`;
    }
  }

  private async render(route: DocumentRoute, token: vscode.CancellationToken): Promise<string> {
    switch (route.kind) {
      case 'context': {
        const contextId = this.store?.current(route.uri)?.contextId ?? null;
        const context = await this.manager.api.assembleContext({ uri: route.uri, contextId }, { token });
        return context.markdown ?? '';
      }
      case 'memory': {
        const api = this.manager.api;
        const [memory, related] = await Promise.all([
          api.recall({ id: route.id, level: 'full', folder: route.folder }),
          api.related({ id: route.id, depth: 1, folder: route.folder }),
        ]);
        return renderMemory(memory, related);
      }
      case 'stats': {
        const stats = await this.manager.api.stats({ folder: route.folder });
        return renderObject('Memory stats', stats);
      }
      case 'result':
        return this.results.get(route.key) ?? `# ${route.title}\n\n(This result is no longer kept.)\n`;
    }
  }

  /** Every open context document is assembled again. */
  refreshContexts(): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === DOCUMENT_SCHEME && parseRoute(doc.uri.path, doc.uri.query)?.kind === 'context') {
        this.changeEmitter.fire(doc.uri);
      }
    }
  }

  /** Opens a route in the Markdown preview (or as text where there is no preview). */
  async show(route: DocumentRoute, options: { refresh?: boolean } = {}): Promise<void> {
    if (route.kind !== 'result') {
      this.manager.ensureRunning();
    }
    const uri = this.uriFor(route);
    if (options.refresh) {
      this.changeEmitter.fire(uri);
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    try {
      await vscode.commands.executeCommand('markdown.showPreview', uri);
    } catch {
      await vscode.window.showTextDocument(doc, { preview: true });
    }
  }

  /** Shows Markdown made by a command (ingest and consolidate summaries, contradictions). */
  async showResult(title: string, markdown: string): Promise<void> {
    this.counter += 1;
    const key = String(this.counter);
    this.results.set(key, markdown);
    while (this.results.size > MAX_RESULTS) {
      const oldest = this.results.keys().next().value;
      if (oldest === undefined) {
        break;
      }
      this.results.delete(oldest);
    }
    await this.show({ kind: 'result', key, title });
  }

  dispose(): void {
    this.registration.dispose();
    this.changeEmitter.dispose();
  }
}
