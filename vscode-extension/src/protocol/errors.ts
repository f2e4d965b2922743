/** Turning the server's error responses into sentences a person can act on. */
import { ErrorCodes, LSPErrorCodes } from 'vscode-languageserver-protocol';

export type ErrorKind = 'invalid' | 'unavailable' | 'cancelled' | 'internal' | 'other';

export interface DescribedError {
  kind: ErrorKind;
  message: string;
}

function codeOf(error: unknown): number | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = error.code;
    return typeof code === 'number' ? code : undefined;
  }
  return undefined;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  if (typeof error === 'object' && error !== null && 'message' in error) {
    const message = error.message;
    if (typeof message === 'string') {
      return message;
    }
  }
  return String(error);
}

/**
 * The kind of failure and a readable message. The server's messages already name the command
 * and the argument (`livingMemory.remember: argument 'text' is required`); `what` says what
 * the user was doing.
 */
export function describeError(error: unknown, what: string): DescribedError {
  const code = codeOf(error);
  const message = messageOf(error).trim() || 'no details';
  switch (code) {
    case ErrorCodes.InvalidParams:
      return { kind: 'invalid', message: `${what}: ${message}` };
    case LSPErrorCodes.RequestFailed:
      return { kind: 'unavailable', message: `${what} failed: ${message}` };
    case LSPErrorCodes.RequestCancelled:
      return { kind: 'cancelled', message: `${what} was cancelled.` };
    case ErrorCodes.InternalError:
      return {
        kind: 'internal',
        message: `${what} failed inside the server: ${message} (see the Living Memory log)`,
      };
    default:
      return { kind: 'other', message: `${what} failed: ${message}` };
  }
}
