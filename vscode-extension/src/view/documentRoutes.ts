/**
 * The read-only documents the extension shows (scheme `living-memory`): a file's context, a
 * memory in full, the store's statistics, a command's result. Path and query in, route out.
 * Pure (no `vscode`).
 */

export type DocumentRoute =
  | { kind: 'context'; uri: string }
  | { kind: 'memory'; id: number; folder?: string | undefined }
  | { kind: 'stats'; folder?: string | undefined }
  | { kind: 'result'; key: string; title: string };

export interface RouteLocation {
  path: string;
  query: string;
}

function lastSegment(uri: string): string {
  const clean = uri.split(/[?#]/)[0] ?? uri;
  const parts = clean.split('/').filter((p) => p !== '');
  return decodeURIComponent(parts[parts.length - 1] ?? 'file');
}

/** Characters a file name in a tab title should not carry. */
function safe(name: string): string {
  return name.replace(/[/\\?#%]/g, '_');
}

export function routeLocation(route: DocumentRoute): RouteLocation {
  const query = new URLSearchParams();
  switch (route.kind) {
    case 'context':
      query.set('uri', route.uri);
      return { path: `/context/${safe(lastSegment(route.uri))} (context).md`, query: query.toString() };
    case 'memory':
      if (route.folder) {
        query.set('folder', route.folder);
      }
      return { path: `/memory/memory ${route.id}.md`, query: query.toString() };
    case 'stats':
      if (route.folder) {
        query.set('folder', route.folder);
      }
      return { path: '/stats/Memory stats.md', query: query.toString() };
    case 'result':
      return { path: `/result/${safe(route.key)}/${safe(route.title)}.md`, query: '' };
  }
}

export function parseRoute(path: string, queryText: string): DocumentRoute | undefined {
  const query = new URLSearchParams(queryText);
  const parts = path.split('/').filter((p) => p !== '');
  const folder = query.get('folder') ?? undefined;
  switch (parts[0]) {
    case 'context': {
      const uri = query.get('uri');
      return uri ? { kind: 'context', uri } : undefined;
    }
    case 'memory': {
      const match = /^memory (\d+)\.md$/.exec(parts[1] ?? '');
      return match ? { kind: 'memory', id: Number(match[1]), folder } : undefined;
    }
    case 'stats':
      return { kind: 'stats', folder };
    case 'result': {
      const key = parts[1];
      const title = (parts[2] ?? '').replace(/\.md$/, '');
      return key ? { kind: 'result', key, title } : undefined;
    }
    default:
      return undefined;
  }
}
