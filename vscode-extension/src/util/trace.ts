/**
 * The protocol trace follows the log channel's level (vscode.LogLevel: Off 0, Trace 1,
 * Debug 2, Info 3, Warning 4, Error 5): Trace shows every message with its content, Debug
 * the message names, anything above none. Pure (no `vscode`).
 */
import { Trace } from 'vscode-languageserver-protocol';

export function traceFor(logLevel: number): Trace {
  switch (logLevel) {
    case 1:
      return Trace.Verbose;
    case 2:
      return Trace.Messages;
    default:
      return Trace.Off;
  }
}
