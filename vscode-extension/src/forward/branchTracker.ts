/**
 * The branch of each repository, from the git extension's `repository.state.HEAD`: which
 * changes are worth a `livingMemory/branchChanged`. Pure (no `vscode`).
 */
import type { BranchChangedParams } from '../protocol/notifications';

/** What is read from the git extension's `Ref`. */
export interface HeadLike {
  readonly name?: string | undefined;
}

export class BranchTracker {
  private readonly branches = new Map<string, string | null>();

  /**
   * The notification for a repository's new HEAD, or undefined when nothing changed. The
   * first HEAD seen is reported too (the server then trusts the client for that folder).
   * An undefined HEAD (the repository is still loading) changes nothing; a HEAD without a
   * name is a detached HEAD (branch null).
   */
  update(folder: string, head: HeadLike | undefined): BranchChangedParams | undefined {
    if (head === undefined) {
      return undefined;
    }
    const branch = head.name ?? null;
    const known = this.branches.has(folder);
    const previous = this.branches.get(folder) ?? null;
    if (known && previous === branch) {
      return undefined;
    }
    this.branches.set(folder, branch);
    return { folder, branch, previous };
  }

  branch(folder: string): string | null | undefined {
    return this.branches.get(folder);
  }

  forget(folder: string): void {
    this.branches.delete(folder);
  }
}
