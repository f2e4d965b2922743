/** Sample payloads shared by the unit tests. */
import type { ContextUpdatedParams } from '../../src/protocol/notifications';

export function sampleUpdate(overrides: Partial<ContextUpdatedParams> = {}): ContextUpdatedParams {
  return {
    uri: 'file:///w/src/auth.py',
    folder: 'file:///w',
    path: 'src/auth.py',
    branch: 'main',
    activity: 'debugging',
    tokens: {
      total: 7800,
      budget: 8000,
      tiers: {
        critical: { used: 2900, budget: 3000, items: 4 },
        relevant: { used: 2500, budget: 2500, items: 6 },
        background: { used: 1400, budget: 1500, items: 3 },
        index: { used: 1000, budget: 1000, items: 20 },
      },
    },
    items: [],
    injected: ['/w/.cursor/rules/living-memory.mdc'],
    refused: [],
    generation: 3,
    elapsedMs: 4.2,
    ...overrides,
  };
}
