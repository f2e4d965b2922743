/**
 * The server asks the editor's own language models to judge a candidate contradiction
 * (`livingMemory/judge`, server → client): the request carries the prompt, the extension
 * answers the model's verdict as JSON or declines with a reason. Everything here is free of
 * `vscode` (the model and the user's consent come in as functions), so node's test runner
 * exercises the whole bridge with a fake model.
 */

export const JUDGE_REQUEST = 'livingMemory/judge';

/** Announced in the client's `experimental` capabilities when the editor has language models. */
export const JUDGE_CAPABILITY = { livingMemory: { judge: true } } as const;

/** What the server sends: a system text, the pair as `A:\n…\n\nB:\n…`, the output budget. */
export interface JudgeParams {
  purpose: 'judge';
  system: string;
  prompt: string;
  maxTokens: number;
}

export type JudgeReply = { answer: Record<string, unknown>; model: string } | { declined: string };

/** A chat model as the bridge needs it (the editor's, or a fake in the tests). */
export interface ChatModel {
  /** `vendor/family` or an id, for the log and the reply. */
  readonly name: string;
  /** The most input tokens the model takes (0: unknown). */
  readonly maxInputTokens: number;
  /** The model's text for one user message (streamed pieces). */
  send(text: string, justification: string, cancel: Cancellation): Promise<AsyncIterable<string>>;
}

export interface Cancellation {
  readonly isCancellationRequested: boolean;
}

export interface JudgeDeps {
  /** Whether the user lets the editor's models be asked (may ask the user once). */
  consent(): Promise<boolean>;
  /** The model to ask; undefined when the editor has none. */
  selectModel(): Promise<ChatModel | undefined>;
  cancel?: Cancellation;
}

/** Shown by the editor when it asks the user to let this extension use a model. */
export const JUSTIFICATION =
  'Living Memory asks whether two of your project memories contradict each other ' +
  '(the two texts are sent to the model).';

/** The answer text read at most (a verdict is a few hundred characters). */
export const MAX_ANSWER_CHARS = 20_000;
const CHARS_PER_TOKEN = 4;

export function isJudgeParams(value: unknown): value is JudgeParams {
  if (typeof value !== 'object' || value === null) {
    return false;
  }
  const p = value as Record<string, unknown>;
  return (
    p.purpose === 'judge' &&
    typeof p.system === 'string' &&
    typeof p.prompt === 'string' &&
    p.prompt.length > 0 &&
    typeof p.maxTokens === 'number' &&
    p.maxTokens > 0
  );
}

/** One user message: the editor's chat models take no system message. */
export function chatText(params: JudgeParams): string {
  return `${params.system}\n\n${params.prompt}`;
}

/**
 * The JSON object of a model's answer: reasoning blocks (`<think>…</think>`) and a code fence
 * are tolerated, and prose around one object is skipped; undefined when there is none.
 */
export function extractJson(text: string): Record<string, unknown> | undefined {
  const body = text.replace(/<think>[\s\S]*?<\/think>/g, '').trim();
  const fenced = /```(?:json)?\s*\n?([\s\S]*?)\n?```/.exec(body);
  const candidates = fenced?.[1] !== undefined ? [fenced[1].trim(), body] : [body];
  for (const candidate of candidates) {
    for (let start = candidate.indexOf('{'); start >= 0; start = candidate.indexOf('{', start + 1)) {
      const end = objectEnd(candidate, start);
      if (end < 0) {
        continue;
      }
      try {
        const value: unknown = JSON.parse(candidate.slice(start, end + 1));
        if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
          return value as Record<string, unknown>;
        }
      } catch {
        // not JSON from this brace: try the next one
      }
    }
  }
  return undefined;
}

/** The index of the brace closing the object opened at `start` (strings respected), or -1. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') {
        i++;
      } else if (ch === '"') {
        inString = false;
      }
    } else if (ch === '"') {
      inString = true;
    } else if (ch === '{') {
      depth++;
    } else if (ch === '}') {
      depth--;
      if (depth === 0) {
        return i;
      }
    }
  }
  return -1;
}

/** Answers one `livingMemory/judge` request: the verdict JSON, or why not. Never throws. */
export async function answerJudge(params: unknown, deps: JudgeDeps): Promise<JudgeReply> {
  if (!isJudgeParams(params)) {
    return { declined: 'a malformed judge request' };
  }
  try {
    // a model first (no prompt in an editor without one), then the user's consent
    const model = await deps.selectModel();
    if (!model) {
      return { declined: 'the editor has no language model' };
    }
    if (!(await deps.consent())) {
      return { declined: "the user has not allowed the editor's language models (livingMemory.judge.useEditorModels)" };
    }
    const text = chatText(params);
    if (model.maxInputTokens > 0 && text.length / CHARS_PER_TOKEN > model.maxInputTokens) {
      return { declined: `the question is too long for ${model.name}` };
    }
    const cancel = deps.cancel ?? { isCancellationRequested: false };
    let answer = '';
    for await (const piece of await model.send(text, JUSTIFICATION, cancel)) {
      answer += piece;
      if (answer.length > MAX_ANSWER_CHARS || cancel.isCancellationRequested) {
        break;
      }
    }
    const verdict = extractJson(answer);
    if (!verdict) {
      return { declined: `${model.name} did not answer with a JSON object` };
    }
    return { answer: verdict, model: model.name };
  } catch (e) {
    return { declined: `the editor's model failed: ${e instanceof Error ? e.message : String(e)}` };
  }
}
