/**
 * The `vscode.lm` bridge's pure parts: reading a model's answer, and answering a
 * `livingMemory/judge` request with a fake model — consent, no model, a failing model, an
 * answer that is not JSON, a prompt too long for the model.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { answerJudge, chatText, extractJson, isJudgeParams, JUSTIFICATION } from '../../src/protocol/judge';
import type { ChatModel, JudgeParams } from '../../src/protocol/judge';
import type { JudgeRunResult } from '../../src/protocol/commands';
import { judgedMessage, pendingLabel, pendingTooltip, settledMessage } from '../../src/view/pending';

const params: JudgeParams = {
  purpose: 'judge',
  system: 'Compare A and B. Answer as JSON.',
  prompt: 'A:\nWe use PostgreSQL\n\nB:\nWe moved to MySQL',
  maxTokens: 600,
};

function fakeModel(answer: string | Error, maxInputTokens = 4096): ChatModel & { sent: string[]; justifications: string[] } {
  const sent: string[] = [];
  const justifications: string[] = [];
  return {
    name: 'fake/judge',
    maxInputTokens,
    sent,
    justifications,
    send(text, justification) {
      sent.push(text);
      justifications.push(justification);
      if (answer instanceof Error) {
        return Promise.reject(answer);
      }
      const pieces = [answer.slice(0, 7), answer.slice(7)];
      return Promise.resolve(
        (async function* () {
          for (const p of pieces) {
            await Promise.resolve();
            yield p;
          }
        })(),
      );
    },
  };
}

const allow = () => Promise.resolve(true);

describe('extractJson', () => {
  test('reads a bare object, a fenced one, one after reasoning or inside prose', () => {
    const verdict = { verdict: 'compatible', reason: 'both hold', confidence: 0.8 };
    const text = JSON.stringify(verdict);
    assert.deepEqual(extractJson(text), verdict);
    assert.deepEqual(extractJson('```json\n' + text + '\n```'), verdict);
    assert.deepEqual(extractJson('<think>{"no": 1} hmm</think>\n' + text), verdict);
    assert.deepEqual(extractJson(`Here is my answer: ${text} Hope it helps.`), verdict);
  });

  test('braces inside strings do not end the object; no object is undefined', () => {
    assert.deepEqual(extractJson('{"reason": "a } inside", "x": {"y": 1}}'), { reason: 'a } inside', x: { y: 1 } });
    assert.equal(extractJson('They contradict each other.'), undefined);
    assert.equal(extractJson('{"unterminated": '), undefined);
    assert.equal(extractJson('[1, 2]'), undefined);
  });
});

describe('answerJudge', () => {
  test('asks the model once with the system text and the pair, answers its verdict', async () => {
    const model = fakeModel('Sure. {"verdict": "supersedes", "reason": "moved", "confidence": 0.9, "quote_a": "PostgreSQL", "quote_b": "MySQL"}');
    const reply = await answerJudge(params, { consent: allow, selectModel: () => Promise.resolve(model) });
    assert.deepEqual(reply, {
      answer: { verdict: 'supersedes', reason: 'moved', confidence: 0.9, quote_a: 'PostgreSQL', quote_b: 'MySQL' },
      model: 'fake/judge',
    });
    assert.deepEqual(model.sent, [chatText(params)]);
    assert.ok(model.sent[0]?.startsWith(params.system) && model.sent[0].endsWith(params.prompt));
    assert.deepEqual(model.justifications, [JUSTIFICATION]);
  });

  test('without consent the model is never asked', async () => {
    const model = fakeModel('{"verdict": "compatible", "reason": "both hold", "confidence": 1}');
    const reply = await answerJudge(params, { consent: () => Promise.resolve(false), selectModel: () => Promise.resolve(model) });
    assert.ok('declined' in reply && /not allowed/.test(reply.declined));
    assert.deepEqual(model.sent, []);
  });

  test('an editor without a model never asks the user', async () => {
    let prompts = 0;
    const reply = await answerJudge(params, {
      consent: () => {
        prompts++;
        return Promise.resolve(true);
      },
      selectModel: () => Promise.resolve(undefined),
    });
    assert.ok('declined' in reply && /no language model/.test(reply.declined));
    assert.equal(prompts, 0);
  });

  test('declines with a reason: no model, a failing model, no JSON, too long, malformed', async () => {
    const cases: [unknown, () => Promise<ChatModel | undefined>, RegExp][] = [
      [params, () => Promise.resolve(undefined), /no language model/],
      [params, () => Promise.resolve(fakeModel(new Error('Blocked by policy'))), /failed: Blocked by policy/],
      [params, () => Promise.resolve(fakeModel('They contradict.')), /did not answer with a JSON object/],
      [params, () => Promise.resolve(fakeModel('{}', 5)), /too long/],
      [{ purpose: 'judge', prompt: 7 }, () => Promise.resolve(fakeModel('{}')), /malformed/],
    ];
    for (const [p, selectModel, reason] of cases) {
      const reply = await answerJudge(p, { consent: allow, selectModel });
      assert.ok('declined' in reply, JSON.stringify(reply));
      assert.match(reply.declined, reason);
    }
  });

  test('a consent prompt that fails is a refusal, not an error', async () => {
    const reply = await answerJudge(params, { consent: () => Promise.reject(new Error('no window')), selectModel: () => Promise.resolve(fakeModel('{}')) });
    assert.ok('declined' in reply && /no window/.test(reply.declined));
  });

  test('isJudgeParams wants the purpose, both texts and a positive budget', () => {
    assert.ok(isJudgeParams(params));
    assert.ok(!isJudgeParams({ ...params, maxTokens: 0 }));
    assert.ok(!isJudgeParams({ ...params, purpose: 'ask' }));
    assert.ok(!isJudgeParams(null));
  });
});

describe('candidate pairs in the view', () => {
  const side = (id: number, text: string) => ({ id, kind: 'decision' as const, label: '', compressed: '', anchors: [], archived: false, supersededBy: null, createdAt: 0, text });
  const pair = {
    id: 4,
    a: side(1, 'We use PostgreSQL'),
    b: side(2, 'We moved to MySQL'),
    status: 'pending' as const,
    resolution: null,
    note: null,
    reason: 'same subject: postgresql',
    confidence: 0.7,
    detectedAt: 0,
    resolvedAt: null,
  };

  test('label and tooltip show both sides, older first, and why the pair was proposed', () => {
    assert.equal(pendingLabel(pair), '#4: We use PostgreSQL ⟷ We moved to MySQL');
    const tip = pendingTooltip(pair);
    assert.ok(tip.indexOf('Older #1') < tip.indexOf('Newer #2'));
    assert.match(tip, /never in a context/);
    assert.match(tip, /proposed: same subject: postgresql/);
  });

  test('messages say who judged, what came of it and what still waits', () => {
    const run: JudgeRunResult = { by: 'editor-models', opened: [9], conflicts: 1, compatible: 2, unanswered: 1, left: 3 };
    assert.equal(
      judgedMessage(run),
      "Living Memory: 3 judged by the editor's language model · 1 contradiction, 2 compatible · 1 not answered · 3 still waiting.",
    );
    assert.match(judgedMessage({ ...run, by: null, conflicts: 0, compatible: 0, unanswered: 0 }), /no judge is available for the 3 candidate/);
    assert.match(judgedMessage({ ...run, by: null, left: 0 }), /no candidate contradiction waits/);
    assert.match(settledMessage({ candidate: 4, conflict: true, contradiction: 12 }), /now contradiction #12/);
    assert.match(settledMessage({ candidate: 4, conflict: false, contradiction: null }), /dismissed/);
  });
});
