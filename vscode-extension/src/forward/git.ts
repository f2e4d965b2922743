/**
 * Each repository's branch, through the built-in git extension, → `livingMemory/branchChanged`
 * with the previous branch. Without the git extension the server reads `.git/HEAD` itself.
 */
import * as vscode from 'vscode';
import type { NotificationSender } from '../client/serverManager';
import { branchChanged } from '../protocol/notifications';
import { BranchTracker } from './branchTracker';
import { GIT_EXTENSION_ID } from './gitApi';
import type { GitApi, GitExtension, GitRepository } from './gitApi';

export class GitForwarder implements vscode.Disposable {
  private readonly tracker = new BranchTracker();
  private readonly repositories = new Map<string, { repo: GitRepository; sub: vscode.Disposable }>();
  private readonly disposables: { dispose(): unknown }[] = [];
  private api: GitApi | undefined;

  constructor(
    private readonly sender: NotificationSender,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** Connects to the git extension (when it is there and enabled). */
  async connect(): Promise<void> {
    const extension = vscode.extensions.getExtension<GitExtension>(GIT_EXTENSION_ID);
    if (!extension) {
      this.log.info('the git extension is not installed: the server reads .git/HEAD itself');
      return;
    }
    try {
      const exports = extension.isActive ? extension.exports : await extension.activate();
      if (!exports.enabled) {
        this.log.info('the git extension is disabled: the server reads .git/HEAD itself');
        return;
      }
      this.api = exports.getAPI(1);
    } catch (e) {
      this.log.warn(`the git extension's API is not available: ${String(e)}`);
      return;
    }
    this.disposables.push(
      this.api.onDidOpenRepository((repo) => {
        this.add(repo);
      }),
      this.api.onDidCloseRepository((repo) => {
        this.remove(repo);
      }),
    );
    for (const repo of this.api.repositories) {
      this.add(repo);
    }
  }

  /** The server (re)started: report every repository's branch again. */
  resync(): void {
    for (const { repo } of this.repositories.values()) {
      const folder = repo.rootUri.toString();
      this.tracker.forget(folder);
      this.check(repo);
    }
  }

  private add(repo: GitRepository): void {
    const folder = repo.rootUri.toString();
    if (this.repositories.has(folder)) {
      return;
    }
    const sub = repo.state.onDidChange(() => {
      this.check(repo);
    });
    this.repositories.set(folder, { repo, sub });
    this.check(repo);
  }

  private remove(repo: GitRepository): void {
    const folder = repo.rootUri.toString();
    this.repositories.get(folder)?.sub.dispose();
    this.repositories.delete(folder);
    this.tracker.forget(folder);
  }

  private check(repo: GitRepository): void {
    const params = this.tracker.update(repo.rootUri.toString(), repo.state.HEAD);
    if (params) {
      this.log.debug(`branch of ${params.folder ?? 'all'}: ${params.previous ?? '-'} → ${params.branch ?? 'detached'}`);
      this.sender.notify(branchChanged, params);
    }
  }

  dispose(): void {
    for (const { sub } of this.repositories.values()) {
      sub.dispose();
    }
    this.repositories.clear();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
