/**
 * The latest `livingMemory/contextUpdated` per file, and which one the user is looking at.
 * Pure (no `vscode`); listeners are plain callbacks.
 */
import type { ContextUpdatedParams } from '../protocol/notifications';

export const MAX_REMEMBERED = 50;

export class ContextStore {
  private readonly byUri = new Map<string, ContextUpdatedParams>();
  private latestUpdate: ContextUpdatedParams | undefined;
  private readonly listeners = new Set<(update: ContextUpdatedParams | undefined) => void>();

  get latest(): ContextUpdatedParams | undefined {
    return this.latestUpdate;
  }

  update(params: ContextUpdatedParams): void {
    const held = this.byUri.get(params.uri);
    if (isOlder(params, held)) {
      return; // a context older than the one shown for that file never replaces it
    }
    this.byUri.delete(params.uri);
    this.byUri.set(params.uri, params);
    while (this.byUri.size > MAX_REMEMBERED) {
      const oldest = this.byUri.keys().next().value;
      if (oldest === undefined) {
        break;
      }
      this.byUri.delete(oldest);
    }
    this.latestUpdate = params;
    this.emit(params);
  }

  /**
   * The context to show while `activeUri` is on screen: that file's latest context (none
   * yet: undefined, never another file's); with no file on screen (an output pane, no
   * editor), the latest one. The status bar, the view and Copy Context all use this.
   */
  current(activeUri: string | undefined): ContextUpdatedParams | undefined {
    return activeUri === undefined ? this.latestUpdate : this.byUri.get(activeUri);
  }

  /** The context of `uri` when known, else the latest one (the server's active file). */
  forUri(uri: string | undefined): ContextUpdatedParams | undefined {
    return (uri === undefined ? undefined : this.byUri.get(uri)) ?? this.latestUpdate;
  }

  clear(): void {
    this.byUri.clear();
    this.latestUpdate = undefined;
    this.emit(undefined);
  }

  onDidChange(listener: (update: ContextUpdatedParams | undefined) => void): { dispose(): void } {
    this.listeners.add(listener);
    return {
      dispose: () => {
        this.listeners.delete(listener);
      },
    };
  }

  private emit(update: ContextUpdatedParams | undefined): void {
    for (const listener of [...this.listeners]) {
      listener(update);
    }
  }
}

function isOlder(update: ContextUpdatedParams, held: ContextUpdatedParams | undefined): boolean {
  const a = update.contextId;
  const b = held?.contextId;
  return typeof a === 'number' && typeof b === 'number' && a < b;
}
