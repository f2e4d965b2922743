"""The process: the command line and (later) the language server. Wiring only."""
