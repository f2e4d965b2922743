/** The parts of the built-in git extension's API (`vscode.git`, `getAPI(1)`) that are used. */
import type * as vscode from 'vscode';

export interface GitRef {
  readonly name?: string;
  readonly commit?: string;
}

export interface GitRepositoryState {
  readonly HEAD: GitRef | undefined;
  readonly onDidChange: vscode.Event<void>;
}

export interface GitRepository {
  readonly rootUri: vscode.Uri;
  readonly state: GitRepositoryState;
}

export interface GitApi {
  readonly repositories: GitRepository[];
  readonly onDidOpenRepository: vscode.Event<GitRepository>;
  readonly onDidCloseRepository: vscode.Event<GitRepository>;
}

export interface GitExtension {
  readonly enabled: boolean;
  getAPI(version: 1): GitApi;
}

export const GIT_EXTENSION_ID = 'vscode.git';
