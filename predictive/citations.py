"""What a memory names in the code, read from its text, anchors and metadata.

These are candidates: :mod:`predictive.staleness` keeps only those that held in the tree of
the commit the memory was learned at (the file existed, the symbol was in it, the dependency
was declared), so words that merely look like code are never checked against it.

- **files**: file anchors, a commit's files, paths in the text (``src/auth/tokens.py``,
  ``pyproject.toml``), dotted module names in backticks (```storage.schema```).
- **symbols**: ``name()`` and ``Class.method()`` calls, identifiers in backticks that read as
  code (``snake_case``, ``camelCase``, ``CONSTANT_NAME``), symbol anchors.
- **dependencies**: names in install commands (``pip install httpx``), in backticks, or next
  to a word like *library*, *package*, *dependency*.
- **commands**: ``npm run build`` / ``yarn test`` / ``pnpm run lint`` and ``make target``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from storage import AnchorType, Memory

_EXT = (
    r"py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|java|kt|rb|php|cs|c|h|cc|cpp|hpp|swift|scala|sh|sql|"
    r"toml|json|ya?ml|cfg|ini|md|mdc|txt|lock|vue|svelte|html|css|scss|proto|tf|ex|exs"
)
_PATH = re.compile(
    rf"(?<![\w/.@:-])((?:\.?[\w@.-]+/)+[\w.-]+\.(?:{_EXT})|[\w.-]+\.(?:{_EXT})|"
    r"(?:[\w.-]+/)*(?:Makefile|Dockerfile|Justfile|Procfile))(?![\w/-])"
)
_CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)\(\)")
_TICKED = re.compile(r"`([^`\s]{2,80})`")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_DOTTED = re.compile(r"^[a-z_]\w*(?:\.[a-z_]\w*)+$")
_INSTALL = re.compile(
    r"\b(?:pip3? install|uv (?:pip install|add)|poetry add|pipenv install|npm (?:install|i)|"
    r"yarn add|pnpm add|cargo add|go get)((?:[ \t]+(?:-{1,2}[\w-]+|[\w@][\w@/.=<>~^-]*\w))+)"
)
_CUE = re.compile(
    r"(?:`?([A-Za-z][\w.-]*)`?\s+(?:library|package|dependency|module|client|framework|sdk)\b)|"
    r"(?:\b(?:library|package|dependency|dependencies|depend on|depends on|switch(?:ed)? to|"
    r"migrat(?:e|ed) to|replace[sd]? with|in favou?r of)\s+`?([A-Za-z][\w.-]*)`?)",
    re.I,
)
_COMMAND = re.compile(
    r"\b(?:(npm|pnpm|yarn)\s+(?:run\s+)?(\w(?:[\w:.-]*\w)?)|(make)\s+([A-Za-z0-9](?:[\w.-]*\w)?))"
)
_NPM_BUILTINS = frozenset(
    {"install", "i", "add", "ci", "init", "publish", "update", "remove", "uninstall", "exec"}
)
_COMMON = frozenset(
    {
        "print",
        "len",
        "str",
        "int",
        "list",
        "dict",
        "set",
        "open",
        "range",
        "main",
        "init",
        "super",
        "self",
        "this",
        "true",
        "false",
        "null",
        "none",
    }
)
MAX_FILES = 40  # a sweeping commit cites at most this many files
MAX_SYMBOLS = 12


@dataclass
class Candidates:
    """What a memory may cite, before it is checked against the tree it was learned in."""

    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)  # dotted names that may be files
    dependencies: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # "npm build", "make test"

    def __bool__(self) -> bool:
        return bool(
            self.files or self.symbols or self.modules or self.dependencies or self.commands
        )


def _clean_path(p: str) -> str | None:
    p = p.strip().strip("`'\"").removeprefix("./")
    if not p or p.startswith(("/", "http", "~")) or ".." in p.split("/") or "//" in p:
        return None
    return p


def _code_like(word: str) -> bool:
    """Whether an identifier reads as code rather than as a word: ``snake_case``,
    ``camelCase``/``PascalCase`` with an inner capital, ``CONSTANT_NAME``."""
    if "_" in word.strip("_"):
        return True
    return bool(re.search(r"[a-z][A-Z]", word)) or (word.isupper() and len(word) > 3)


def candidates(m: Memory) -> Candidates:
    """What ``m`` names in the code (see the module's docstring)."""
    symbols, modules, deps = _ticked(m)
    return Candidates(
        files=_files(m)[:MAX_FILES],
        symbols=[s for s in symbols if s.lower() not in _COMMON][:MAX_SYMBOLS],
        modules=modules[:MAX_SYMBOLS],
        dependencies=_dependencies(m.text, deps)[:MAX_SYMBOLS],
        commands=_commands(m.text)[:MAX_SYMBOLS],
    )


def _files(m: Memory) -> list[str]:
    """File anchors, a commit's files and paths in the text."""
    files: dict[str, None] = {}
    for a in m.anchors:
        if a.type is AnchorType.FILE and (p := _clean_path(a.value)):
            files[p] = None
    meta = m.metadata if isinstance(m.metadata, dict) else {}
    listed = meta.get("files")
    for p in listed if isinstance(listed, list) else ():
        if isinstance(p, str) and (c := _clean_path(p)):
            files[c] = None
    for found in _PATH.findall(m.text):
        if (c := _clean_path(found)) and not re.fullmatch(r"[\d.]+", c.rsplit(".", 1)[0]):
            files[c] = None
    return list(files)


def _ticked(m: Memory) -> tuple[list[str], list[str], list[str]]:
    """Symbols (calls, code-like words in backticks, symbol anchors), dotted module names
    and plain names in backticks (perhaps packages)."""
    symbols: dict[str, None] = {}
    for call in _CALL.findall(m.text):
        name = call.rsplit(".", 1)[-1]
        if name.lower() not in _COMMON and len(name) > 2:
            symbols[call] = None
    modules: dict[str, None] = {}
    deps: dict[str, None] = {}
    for tick in _TICKED.findall(m.text):
        word = tick.removesuffix("()")
        if _DOTTED.match(word) and not _PATH.fullmatch(word):
            modules[word] = None
        elif _IDENT.match(word):
            if _code_like(word):
                symbols[word] = None
            elif len(word) > 1:
                deps[word] = None
        elif re.fullmatch(r"@?[\w.-]+(?:/[\w.-]+)?", word) and not _PATH.fullmatch(word):
            deps[word] = None
    for a in m.anchors:
        if a.type is AnchorType.SYMBOL and _IDENT.match(a.value.rsplit(".", 1)[-1]):
            symbols[a.value] = None
    return list(symbols), list(modules), list(deps)


def _dependencies(text: str, ticked: list[str]) -> list[str]:
    """Names in install commands and next to words like *library*, after ``ticked``."""
    deps: dict[str, None] = dict.fromkeys(ticked)
    for args in _INSTALL.findall(text):
        for arg in args.split():
            if arg.startswith("-"):
                continue
            if arg.startswith("@"):  # a scoped npm package, perhaps with @version
                deps["@" + arg[1:].split("@")[0]] = None
            else:
                deps[re.split(r"[=<>~^@\[]", arg, maxsplit=1)[0]] = None
    for a, b in _CUE.findall(text):
        deps[a or b] = None
    return [d for d in deps if d and len(d) > 1]


def _commands(text: str) -> list[str]:
    """``npm <script>`` for npm/yarn/pnpm scripts, ``make <target>``."""
    commands: dict[str, None] = {}
    for tool, script, make, target in _COMMAND.findall(text):
        if tool and script not in _NPM_BUILTINS:
            commands[f"npm {script}"] = None
        elif make:
            commands[f"make {target}"] = None
    return list(commands)


def symbol_name(symbol: str) -> str:
    """The name a symbol is searched by: the last part of ``Class.method``."""
    return symbol.rsplit(".", 1)[-1]


def module_paths(module: str) -> list[str]:
    """Where a dotted module's file may be (``a.b`` → ``a/b.py``, ``a/b/__init__.py``,
    ``src/a/b.py``)."""
    base = module.replace(".", "/")
    return [f"{base}.py", f"{base}/__init__.py", f"src/{base}.py", f"src/{base}/__init__.py"]


def defines(text: str, name: str) -> bool:
    """Whether ``text`` holds ``name`` as a whole word (a definition or a use)."""
    if name not in text:
        return False
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text) is not None
