/**
 * The MCP server the extension offers to VS Code's agent mode: `python -m server mcp` for a
 * workspace folder, on the same store as the language server (same data and model folders).
 * No `vscode` import: the definition is built here and unit-tested; client/mcpProvider.ts
 * hands it to the editor.
 */

/** The provider id; package.json's `contributes.mcpServerDefinitionProviders` names it. */
export const MCP_PROVIDER_ID = 'livingMemory.mcp';
export const MCP_PROVIDER_LABEL = 'Living Memory';

export interface McpDefinitionInput {
  python: string;
  folder: { name: string; path: string };
  version: string;
  /** The livingMemory.dataDirectory setting ('' = the default, as for the language server). */
  dataDirectory?: string;
  /** The livingMemory.modelDirectory setting ('' = the packaged model). */
  modelDirectory?: string;
  /** More than one folder: the label names the folder. */
  multiRoot?: boolean;
}

export interface McpDefinition {
  label: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  version: string;
}

function absolute(dir: string, base: string): string {
  if (dir.startsWith('/') || /^[A-Za-z]:[\\/]/.test(dir) || dir.startsWith('\\\\')) {
    return dir;
  }
  const sep = base.includes('\\') && !base.includes('/') ? '\\' : '/';
  return base.replace(/[\\/]+$/, '') + sep + dir;
}

/** The stdio server definition for one folder. */
export function mcpServerDefinition(input: McpDefinitionInput): McpDefinition {
  const env: Record<string, string> = {};
  const data = input.dataDirectory?.trim();
  if (data) {
    env.LIVING_MEMORY_DATA_DIR = absolute(data, input.folder.path);
  }
  const model = input.modelDirectory?.trim();
  if (model) {
    env.LIVING_MEMORY_MODEL_DIR = absolute(model, input.folder.path);
  }
  return {
    label: input.multiRoot ? `${MCP_PROVIDER_LABEL} (${input.folder.name})` : MCP_PROVIDER_LABEL,
    command: input.python,
    args: ['-m', 'server', 'mcp', '--root', input.folder.path],
    env,
    version: input.version,
  };
}
