/**
 * Test setup the server has no command for (a detected contradiction, memories still waiting
 * for their vectors): written straight into the server's database with the real storage
 * package, as the Python tests do (WAL: both may use it at once).
 */
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import { testPython } from './harness';

function runPython(script: string, args: unknown): string {
  return execFileSync(testPython(), ['-c', script, JSON.stringify(args)], {
    cwd: os.tmpdir(),
    encoding: 'utf8',
    env: { ...process.env, LIVING_MEMORY_EMBEDDER: 'hashing' },
  });
}

const ADD_CONTRADICTION = `
import json, sys
from storage import MemoryStore
a = json.loads(sys.argv[1])
store = MemoryStore(a["db"])
print(store.contradictions.add(a["a"], a["b"], reason=a["reason"], confidence=0.8, status=a["status"]))
store.close()
`;

/** Records a contradiction between two memories (open, or suspected: for review only); its id. */
export function addContradiction(
  db: string,
  a: number,
  b: number,
  reason = 'they disagree',
  status: 'open' | 'suspected' = 'open',
): number {
  return Number(runPython(ADD_CONTRADICTION, { db, a, b, reason, status }).trim());
}

const ADD_UNEMBEDDED = `
import json, sys
from storage import MemoryStore, NewMemory
a = json.loads(sys.argv[1])
store = MemoryStore(a["db"], embedder=None)
store.add_many([NewMemory(text=f"{a['tag']} pending memory number {i}") for i in range(a["n"])])
store.close()
`;

/** Adds memories without vectors (the server's reindex embeds them). */
export function addUnembedded(db: string, n: number, tag: string): void {
  runPython(ADD_UNEMBEDDED, { db, n, tag });
}

const SETTINGS = `
import dataclasses, json
from server.settings import Settings
from server.convert import camel
s = Settings()
print(json.dumps({camel(f.name): dataclasses.asdict(s)[f.name] for f in dataclasses.fields(Settings)}))
`;

/** The server's settings and their defaults, as the server defines them (server/settings.py). */
export function serverSettingDefaults(): Record<string, unknown> {
  return JSON.parse(runPython(SETTINGS, {})) as Record<string, unknown>;
}
