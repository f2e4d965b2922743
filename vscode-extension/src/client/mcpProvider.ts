/**
 * Registers the MCP server with VS Code's MCP support (agent mode) where the editor offers it
 * (`vscode.lm.registerMcpServerDefinitionProvider`, VS Code 1.101+). Older VS Code and Cursor
 * lack it: nothing is registered and nothing fails (Cursor users run `living-memory mcp
 * install --client cursor`).
 */
import * as vscode from 'vscode';
import { CONFIG_SECTION } from '../ids';
import { MCP_PROVIDER_ID, mcpServerDefinition } from '../protocol/mcp';
import type { ServerManager } from './serverManager';

interface McpApi {
  lm?: {
    registerMcpServerDefinitionProvider?: (
      id: string,
      provider: {
        onDidChangeMcpServerDefinitions?: vscode.Event<void>;
        provideMcpServerDefinitions: () => unknown[];
      },
    ) => vscode.Disposable;
  };
  McpStdioServerDefinition?: new (
    label: string,
    command: string,
    args?: string[],
    env?: Record<string, string>,
    version?: string,
  ) => unknown;
}

/** The provider's registration, or undefined when this editor has no MCP API. */
export function registerMcpProvider(manager: ServerManager): vscode.Disposable | undefined {
  const api = vscode as unknown as McpApi;
  const register = api.lm?.registerMcpServerDefinitionProvider;
  const Definition = api.McpStdioServerDefinition;
  if (typeof register !== 'function' || typeof Definition !== 'function') {
    return undefined;
  }
  const changed = new vscode.EventEmitter<void>();
  const provider = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: () => {
      const python = manager.python?.path;
      const folders = vscode.workspace.workspaceFolders ?? [];
      if (!python) {
        return [];
      }
      return folders
        .filter((f) => f.uri.scheme === 'file')
        .map((f) => {
          const config = vscode.workspace.getConfiguration(CONFIG_SECTION, f.uri);
          const d = mcpServerDefinition({
            python,
            folder: { name: f.name, path: f.uri.fsPath },
            version: manager.version,
            dataDirectory: config.get<string>('dataDirectory'),
            modelDirectory: config.get<string>('modelDirectory'),
            multiRoot: folders.length > 1,
          });
          return new Definition(d.label, d.command, d.args, d.env, d.version);
        });
    },
  };
  try {
    const registration = register.call(api.lm, MCP_PROVIDER_ID, provider);
    const listeners = [
      manager.onDidStart(() => {
        changed.fire();
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => {
        changed.fire();
      }),
    ];
    return vscode.Disposable.from(registration, changed, ...listeners);
  } catch (e) {
    manager.log.warn(`the MCP server could not be registered with the editor: ${String(e)}`);
    changed.dispose();
    return undefined;
  }
}
