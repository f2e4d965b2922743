/**
 * Editor diagnostics → LSP `Diagnostic` objects for `livingMemory/diagnosticsChanged`.
 * Works on the structure of `vscode.Diagnostic` without importing `vscode`.
 */
import type { Diagnostic, DiagnosticSeverity } from 'vscode-languageserver-protocol';

/** The source our own language client would publish under (never forwarded back). */
export const OWN_SOURCE = 'living-memory';

/** vscode.DiagnosticSeverity: Error = 0, Warning = 1, Information = 2, Hint = 3. */
export type EditorSeverity = 0 | 1 | 2 | 3;

/** vscode's severity (0 = Error … 3 = Hint) → LSP's (1 = Error … 4 = Hint). */
export function toLspSeverity(severity: number): DiagnosticSeverity {
  switch (severity) {
    case 0:
      return 1;
    case 1:
      return 2;
    case 2:
      return 3;
    case 3:
      return 4;
    default:
      throw new RangeError(`not an editor diagnostic severity: ${String(severity)}`);
  }
}

interface PositionLike {
  readonly line: number;
  readonly character: number;
}

interface RangeLike {
  readonly start: PositionLike;
  readonly end: PositionLike;
}

/** What is read from a `vscode.Diagnostic`. */
export interface EditorDiagnostic {
  readonly range: RangeLike;
  readonly message: string;
  readonly severity: number;
  readonly source?: string;
  readonly code?: string | number | { value: string | number; target: { toString(): string } };
  readonly tags?: readonly number[];
}

export function toLspDiagnostic(d: EditorDiagnostic): Diagnostic {
  const out: Diagnostic = {
    range: {
      start: { line: d.range.start.line, character: d.range.start.character },
      end: { line: d.range.end.line, character: d.range.end.character },
    },
    severity: toLspSeverity(d.severity),
    message: d.message,
  };
  if (d.source !== undefined && d.source !== '') {
    out.source = d.source;
  }
  if (typeof d.code === 'string' || typeof d.code === 'number') {
    out.code = d.code;
  } else if (d.code !== undefined) {
    out.code = d.code.value;
    out.codeDescription = { href: d.code.target.toString() };
  }
  if (d.tags !== undefined && d.tags.length > 0) {
    // vscode.DiagnosticTag and LSP's DiagnosticTag share their numbers (1 unnecessary, 2 deprecated)
    out.tags = d.tags.filter((t): t is 1 | 2 => t === 1 || t === 2);
  }
  return out;
}

/** Everyone's diagnostics for a file, ours left out, as the server wants them. */
export function forwardable(diagnostics: readonly EditorDiagnostic[]): Diagnostic[] {
  return diagnostics.filter((d) => d.source !== OWN_SOURCE).map(toLspDiagnostic);
}
