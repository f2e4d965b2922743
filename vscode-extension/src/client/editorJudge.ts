/**
 * The editor's own language models as Living Memory's contradiction judge. When the editor has
 * the `vscode.lm` API the client announces it (experimental capability), and the server may
 * then ask `livingMemory/judge` about a candidate pair it cannot settle alone; the answer
 * comes from a model chosen with `vscode.lm.selectChatModels` — only with the user's consent:
 * the setting `livingMemory.judge.useEditorModels` (off by default), which a prompt offers to
 * turn on the first time the server asks in a window ("Never" is remembered).
 */
import * as vscode from 'vscode';
import type { LanguageClient, StaticFeature } from 'vscode-languageclient/node';
import { CONFIG_SECTION } from '../ids';
import { answerJudge, JUDGE_CAPABILITY, JUDGE_REQUEST } from '../protocol/judge';
import type { Cancellation, ChatModel } from '../protocol/judge';
import type { ServerManager } from './serverManager';

export const USE_EDITOR_MODELS = 'judge.useEditorModels';
export const MODEL_FAMILY = 'judge.modelFamily';
const NEVER_KEY = 'livingMemory.judge.neverAsk';
const ALLOW = 'Allow';
const NOT_NOW = 'Not Now';
const NEVER = 'Never';
const CONSENT_MESSAGE =
  'Living Memory found memories that may contradict each other. Let it ask the editor’s ' +
  'language models to judge them? The texts of each pair are sent to the model.';

/** The part of the `vscode.lm` API used here (VS Code 1.90+; absent in older editors). */
interface LmChatModel {
  readonly id: string;
  readonly vendor: string;
  readonly family: string;
  readonly maxInputTokens: number;
  sendRequest(
    messages: unknown[],
    options?: { justification?: string },
    token?: vscode.CancellationToken,
  ): Thenable<{ text: AsyncIterable<string> }>;
}

interface Lm {
  lm: { selectChatModels(selector?: { family?: string }): Thenable<LmChatModel[]> };
  LanguageModelChatMessage: { User(content: string): unknown };
}

function languageModels(): Lm | undefined {
  const api = vscode as unknown as Partial<Lm>;
  return typeof api.lm?.selectChatModels === 'function' && api.LanguageModelChatMessage ? (api as Lm) : undefined;
}

function chatModel(api: Lm, model: LmChatModel): ChatModel {
  return {
    name: `${model.vendor}/${model.family}`,
    maxInputTokens: model.maxInputTokens,
    async send(text: string, justification: string, cancel: Cancellation) {
      const token = 'onCancellationRequested' in cancel ? (cancel as vscode.CancellationToken) : undefined;
      const response = await model.sendRequest([api.LanguageModelChatMessage.User(text)], { justification }, token);
      return response.text;
    },
  };
}

/** The user's consent: the setting, else one prompt per window unless they said "Never". */
class Consent {
  private prompt: Promise<boolean> | undefined;

  constructor(private readonly state: vscode.Memento) {}

  allowed(): Promise<boolean> {
    if (vscode.workspace.getConfiguration(CONFIG_SECTION).get<boolean>(USE_EDITOR_MODELS) === true) {
      return Promise.resolve(true);
    }
    if (this.state.get<boolean>(NEVER_KEY) === true) {
      return Promise.resolve(false);
    }
    this.prompt ??= this.ask();
    return this.prompt;
  }

  private async ask(): Promise<boolean> {
    const choice = await vscode.window.showInformationMessage(CONSENT_MESSAGE, ALLOW, NOT_NOW, NEVER);
    if (choice === ALLOW) {
      await vscode.workspace
        .getConfiguration(CONFIG_SECTION)
        .update(USE_EDITOR_MODELS, true, vscode.ConfigurationTarget.Global);
      return true;
    }
    if (choice === NEVER) {
      await this.state.update(NEVER_KEY, true);
    }
    return false;
  }
}

const capability: StaticFeature = {
  fillClientCapabilities(capabilities) {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), ...JUDGE_CAPABILITY };
  },
  initialize() {},
  getState() {
    return { kind: 'static' };
  },
  clear() {},
};

/** Lets the server ask the editor's models, when the editor has them. */
export function registerEditorJudge(manager: ServerManager, state: vscode.Memento): void {
  const api = languageModels();
  if (!api) {
    return; // an editor without vscode.lm: the server is never told it could ask
  }
  const consent = new Consent(state);
  const selectModel = async (): Promise<ChatModel | undefined> => {
    const family = vscode.workspace.getConfiguration(CONFIG_SECTION).get<string>(MODEL_FAMILY) ?? '';
    const models = await api.lm.selectChatModels(family ? { family } : {});
    const model = models[0];
    return model ? chatModel(api, model) : undefined;
  };
  manager.onClient((client: LanguageClient) => {
    client.registerFeature(capability);
    client.onRequest(JUDGE_REQUEST, async (params: unknown, token: vscode.CancellationToken) => {
      const reply = await answerJudge(params, { consent: () => consent.allowed(), selectModel, cancel: token });
      manager.log.debug(`judge: ${'declined' in reply ? `declined (${reply.declined})` : `answered by ${reply.model}`}`);
      return reply;
    });
  });
}
