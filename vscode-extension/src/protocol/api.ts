/**
 * Typed calls of the server's commands over any transport that can send
 * `workspace/executeCommand` (the extension's LanguageClient, or a plain JSON-RPC connection
 * in the tests).
 */
import { ExecuteCommandRequest } from 'vscode-languageserver-protocol';
import type {
  CancellationToken,
  ExecuteCommandParams,
  ProgressToken,
} from 'vscode-languageserver-protocol';
import { SERVER_COMMANDS } from './commands';
import type {
  AssembleContextArgs,
  AssembledContext,
  ClaudeImportResult,
  ConsolidateArgs,
  ContradictionsArgs,
  ContradictionsResult,
  Contradiction,
  ExploreArgs,
  ExploreResult,
  FolderArg,
  ForgetArgs,
  IdArgs,
  IngestArgs,
  IngestSummary,
  JobSummary,
  JudgePendingArgs,
  JudgeRunResult,
  RecallArgs,
  RecalledMemory,
  RecalledRelated,
  ReindexArgs,
  ReindexResult,
  RememberArgs,
  RememberResult,
  ResolveContradictionArgs,
  ReviewArgs,
  ReviewedResult,
  ReviewListArgs,
  ReviewListResult,
  ShareArgs,
  ShareResult,
  EditArgs,
  SearchArgs,
  SearchResult,
  SettleCandidateArgs,
  SettledCandidate,
  StatsResult,
} from './commands';

/** Anything that sends a request: LanguageClient.sendRequest and MessageConnection.sendRequest. */
export interface RequestSender {
  sendRequest(
    type: typeof ExecuteCommandRequest.type,
    params: ExecuteCommandParams,
    token?: CancellationToken,
  ): Promise<unknown>;
}

/** Cancellation, and the token the server reports `$/progress` on (else it creates one). */
export interface CallOptions {
  token?: CancellationToken;
  workDoneToken?: ProgressToken;
}

export function executeCommandParams(
  command: string,
  args?: object,
  workDoneToken?: ProgressToken,
): ExecuteCommandParams {
  const params: ExecuteCommandParams = { command, arguments: args === undefined ? [] : [args] };
  if (workDoneToken !== undefined) {
    params.workDoneToken = workDoneToken;
  }
  return params;
}

export class MemoryApi {
  constructor(private readonly sender: RequestSender) {}

  /** Runs a server command by name; its result is whatever JSON the server answers. */
  async execute(command: string, args?: object, options: CallOptions = {}): Promise<unknown> {
    return this.sender.sendRequest(
      ExecuteCommandRequest.type,
      executeCommandParams(command, args, options.workDoneToken),
      options.token,
    );
  }

  private async call<R>(command: string, args?: object, options?: CallOptions): Promise<R> {
    return (await this.execute(command, args, options)) as R;
  }

  assembleContext(args: AssembleContextArgs, options?: CallOptions) {
    return this.call<AssembledContext>(SERVER_COMMANDS.assembleContext, args, options);
  }

  remember(args: RememberArgs) {
    return this.call<RememberResult>(SERVER_COMMANDS.remember, args);
  }

  search(args: SearchArgs, options?: CallOptions) {
    return this.call<SearchResult>(SERVER_COMMANDS.search, args, options);
  }

  recall(args: RecallArgs & { level?: Exclude<RecallArgs['level'], 'related'> }) {
    return this.call<RecalledMemory>(SERVER_COMMANDS.recall, args);
  }

  related(args: Omit<RecallArgs, 'level'>) {
    return this.call<RecalledRelated>(SERVER_COMMANDS.recall, { ...args, level: 'related' });
  }

  explore(args: ExploreArgs) {
    return this.call<ExploreResult>(SERVER_COMMANDS.explore, args);
  }

  cite(args: IdArgs) {
    return this.call<{ id: number; citationCount: number }>(SERVER_COMMANDS.cite, args);
  }

  ignore(args: IdArgs) {
    return this.call<{ id: number; ignoreCount: number }>(SERVER_COMMANDS.ignore, args);
  }

  forget(args: ForgetArgs) {
    return this.call<{ id: number; archived: boolean; purged: boolean; changed: boolean }>(
      SERVER_COMMANDS.forget,
      args,
    );
  }

  restore(args: IdArgs) {
    return this.call<{ id: number; archived: boolean; changed: boolean }>(
      SERVER_COMMANDS.restore,
      args,
    );
  }

  contradictions(args: ContradictionsArgs = {}) {
    return this.call<ContradictionsResult>(SERVER_COMMANDS.contradictions, args);
  }

  /** Puts waiting candidate pairs to the chain of judges (an endpoint, the editor's models). */
  judgePending(args: JudgePendingArgs = {}, options?: CallOptions) {
    return this.call<JudgeRunResult>(SERVER_COMMANDS.judgePending, args, options);
  }

  settleCandidate(args: SettleCandidateArgs) {
    return this.call<SettledCandidate>(SERVER_COMMANDS.settleCandidate, args);
  }

  resolveContradiction(args: ResolveContradictionArgs) {
    return this.call<Contradiction>(SERVER_COMMANDS.resolveContradiction, args);
  }

  stats(args: FolderArg = {}) {
    return this.call<StatsResult>(SERVER_COMMANDS.stats, args);
  }

  reindex(args: ReindexArgs = {}, options?: CallOptions) {
    return this.call<ReindexResult>(SERVER_COMMANDS.reindex, args, options);
  }

  ingest(args: IngestArgs = {}, options?: CallOptions) {
    return this.call<IngestSummary>(SERVER_COMMANDS.ingest, args, options);
  }

  consolidate(args: ConsolidateArgs = {}, options?: CallOptions) {
    return this.call<JobSummary>(SERVER_COMMANDS.consolidate, args, options);
  }

  enableClaudeImport(args: FolderArg = {}) {
    return this.call<ClaudeImportResult>(SERVER_COMMANDS.enableClaudeImport, args);
  }

  /** Memories by review status (default: proposed, awaiting a person). */
  reviewList(args: ReviewListArgs = {}) {
    return this.call<ReviewListResult>(SERVER_COMMANDS.reviewList, args);
  }

  approve(args: ReviewArgs) {
    return this.call<ReviewedResult>(SERVER_COMMANDS.approve, args);
  }

  reject(args: ReviewArgs) {
    return this.call<ReviewedResult>(SERVER_COMMANDS.reject, args);
  }

  /** A new approved version that supersedes the memory (its shared file gets the new text). */
  edit(args: EditArgs) {
    return this.call<RememberResult>(SERVER_COMMANDS.edit, args);
  }

  /** Reads the shared folder, then writes the approved team knowledge into it. */
  share(args: ShareArgs = {}) {
    return this.call<ShareResult>(SERVER_COMMANDS.share, args);
  }
}
