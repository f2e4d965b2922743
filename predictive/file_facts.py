"""What is derived from signals: a file's module, imports, symbols and test pairing; branch
tokens; normalised error signatures. Pure functions; the file system is only read when a
project root is given.
"""

from __future__ import annotations

import ast
import glob
import os
import posixpath
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from predictive.signals import uri_to_path

__all__ = [
    "FileFacts",
    "branch_tokens",
    "derive_file",
    "error_signature",
    "language_for",
]

# Longer texts are analysed up to this many characters (a minified bundle is not a module).
MAX_TEXT = 300_000


@dataclass(frozen=True)
class FileFacts:
    """What a file tells the engine before any memory is looked up."""

    path: str
    language: str | None
    module: str | None
    package: str | None
    imports: tuple[str, ...]
    symbols: tuple[str, ...]
    paired: tuple[str, ...]


# ---------------------------------------------------------------------------------- language

_LANGUAGE_ALIASES = {
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "jsx": "javascriptreact",
    "ts": "typescript",
    "tsx": "typescriptreact",
    "golang": "go",
    "rs": "rust",
    "cs": "csharp",
    "c#": "csharp",
    "c++": "cpp",
    "rb": "ruby",
    "kt": "kotlin",
    "sh": "shellscript",
    "bash": "shellscript",
    "yml": "yaml",
    "md": "markdown",
}

_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".cs": "csharp",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sh": "shellscript",
    ".bash": "shellscript",
    ".md": "markdown",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".html": "html",
    ".css": "css",
    ".scss": "scss",
    ".sql": "sql",
    ".lua": "lua",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".vue": "vue",
    ".svelte": "svelte",
}

_FILENAMES = {"dockerfile": "dockerfile", "makefile": "makefile"}
_KNOWN_IDS = set(_EXTENSIONS.values()) | set(_FILENAMES.values())
_JS_FAMILY = {"javascript", "typescript", "javascriptreact", "typescriptreact"}
_JS_EXT_RE = re.compile(r"(\.d)?\.(?:[cm]?[jt]sx?)$")


def language_for(path: str, language_id: str | None = None) -> str | None:
    """The LSP language id of a file: a known ``language_id`` wins, else the extension."""
    if language_id:
        lid = language_id.strip().lower()
        lid = _LANGUAGE_ALIASES.get(lid, lid)
        if lid in _KNOWN_IDS:
            return lid
    name = posixpath.basename(path.replace("\\", "/")).lower()
    if name in _FILENAMES:
        return _FILENAMES[name]
    by_ext = _EXTENSIONS.get(posixpath.splitext(name)[1])
    if by_ext:
        return by_ext
    if language_id and language_id.strip().lower() not in ("", "plaintext"):
        return language_id.strip().lower()
    return None


# -------------------------------------------------------------------------------------- paths


def _has_drive(p: str) -> bool:
    """True for ``C:/...``."""
    return re.match(r"^[A-Za-z]:/", p) is not None


def _posix(path: str) -> str:
    """Posix form of a path or file URI; a drive letter is lower-cased."""
    p = uri_to_path(path).replace("\\", "/")
    if _has_drive(p):
        p = p[0].lower() + p[1:]
    return p


def _relative(path: str, root: str | None) -> str:
    """Repo-relative posix path when the file is under ``root``; else the normalised path."""
    p = _posix(path)
    absolute = p.startswith("/") or _has_drive(p)
    if root and absolute:
        r = posixpath.normpath(_posix(root))
        rel = posixpath.relpath(posixpath.normpath(p), r)
        if rel != "." and rel != ".." and not rel.startswith("../"):
            return rel
    return posixpath.normpath(p) if p else p


def _split(rel: str) -> tuple[list[str], str]:
    """(directory parts, file name) of a posix path."""
    d, name = posixpath.split(rel)
    return [x for x in d.split("/") if x], name


def _join(*parts: str) -> str:
    """Posix join that ignores empty parts."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


# ----------------------------------------------------------------------------- source helpers

_STRINGS = {
    "js": r"'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"|`(?:\\.|[^`\\])*`",
    "go": r"\"(?:\\.|[^\"\\\n])*\"|`[^`]*`|'(?:\\.|[^'\\\n])+'",
    "rust": r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\\n])'",
    "c": r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])+'",
}
_COMMENT_RES = {k: re.compile(rf"({v})|//[^\n]*|/\*.*?\*/", re.S) for k, v in _STRINGS.items()}


def _strip_comments(text: str, flavour: str, blank_strings: bool = False) -> str:
    """Blank out C-style comments (and string contents if asked), keeping every offset."""

    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        if m.group(1) and not blank_strings:
            return s
        if m.group(1):
            return s[0] + re.sub(r"[^\n]", " ", s[1:-1]) + s[-1]
        return re.sub(r"[^\n]", " ", s)

    return _COMMENT_RES[flavour].sub(repl, text)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    """Non-empty items, first occurrence order."""
    return tuple(dict.fromkeys(i for i in items if i))


def _ordered(pairs: Iterable[tuple[int, str]]) -> tuple[str, ...]:
    """Values of (offset, value) pairs in document order, de-duplicated."""
    return _unique(v for _, v in sorted(pairs, key=lambda p: p[0]))


# ------------------------------------------------------------------------------------ python

_UPPER_RE = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_PY_SOURCE_ROOTS = ("src",)


def _python_module(rel: str, root: str | None) -> tuple[str | None, bool]:
    """(dotted module, is the file a package's ``__init__``)."""
    dirs, name = _split(rel)
    stem = name.rsplit(".", 1)[0]
    is_init = stem == "__init__"
    parts = _package_dirs(rel, root)
    if parts is None:
        if "src" in dirs:
            parts = dirs[len(dirs) - dirs[::-1].index("src") :]
        elif rel.startswith("/") or _has_drive(rel):
            parts = []
        else:
            parts = dirs
    if not is_init:
        parts = [*parts, stem]
    return (".".join(parts) or None), is_init


def _package_dirs(rel: str, root: str | None) -> list[str] | None:
    """Directory parts from the topmost ``__init__.py`` package on disk, or None."""
    absolute = rel.startswith("/") or _has_drive(rel)
    if not root and not absolute:
        return None
    full = rel if absolute else os.path.join(root or "", rel)
    d = os.path.dirname(full)
    if not os.path.isfile(os.path.join(d, "__init__.py")):
        return None
    stop = os.path.normpath(root) if root else None
    parts: list[str] = []
    while os.path.isfile(os.path.join(d, "__init__.py")) and os.path.normpath(d) != stop:
        parts.insert(0, os.path.basename(d))
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return parts


def _resolve_relative(level: int, module: str | None, base: str | None) -> str:
    """``from ..x import y`` against the importing file's package; unresolvable stays relative."""
    if level == 0:
        return module or ""
    base_parts = base.split(".") if base else []
    if base is None or level - 1 > len(base_parts):
        return "." * level + (module or "")
    kept = base_parts[: len(base_parts) - (level - 1)]
    resolved = ".".join([*kept, *([module] if module else [])])
    return resolved or "." * level + (module or "")


@lru_cache(maxsize=16)
def _python_facts(text: str, base: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(imports, top-level symbols) via ``ast``; regexes when the text does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _python_imports_regex(text, base), _python_symbols_regex(text)
    found: list[tuple[tuple[int, int], str]] = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            found += [((node.lineno, node.col_offset), a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            name = _resolve_relative(node.level, node.module, base)
            found.append(((node.lineno, node.col_offset), name))
    imports = _unique(n for _, n in sorted(found, key=lambda f: f[0]) if n != "__future__")
    return imports, _unique(_python_top_level(tree.body))


def _statements(body: list[ast.stmt]) -> Iterable[ast.AST]:
    """Every statement, nested ones included, without visiting expressions (fast)."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                stack.extend(reversed(children))


def _python_top_level(body: list[ast.stmt]) -> Iterable[str]:
    """Names of top-level defs, classes and UPPER_CASE constants (inside top-level if/try too)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and _UPPER_RE.match(t.id):
                    yield t.id
        elif isinstance(node, ast.If):
            yield from _python_top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _python_top_level(node.body + node.orelse + node.finalbody)
            for h in node.handlers:
                yield from _python_top_level(h.body)


_PY_IMPORT_RE = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_PY_FROM_RE = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import\b", re.M)
_PY_DEF_RE = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+(\w+)", re.M)
_PY_CONST_RE = re.compile(r"^(_*[A-Z][A-Z0-9_]*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)


def _python_imports_regex(text: str, base: str | None) -> tuple[str, ...]:
    """Imports of a file that does not parse (half-typed code)."""
    found: list[tuple[int, str]] = []
    for m in _PY_IMPORT_RE.finditer(text):
        for item in m.group(1).split(","):
            name = re.match(r"\s*\(?\s*(\w+(?:\.\w+)*)", item)
            if name:
                found.append((m.start(), name.group(1)))
    for m in _PY_FROM_RE.finditer(text):
        level, module = len(m.group(1)), m.group(2).strip(".") or None
        if level or module:
            found.append((m.start(), _resolve_relative(level, module, base)))
    return _ordered((p, n) for p, n in found if n != "__future__")


def _python_symbols_regex(text: str) -> tuple[str, ...]:
    """Top-level symbols of a file that does not parse."""
    found = [(m.start(), m.group(1)) for m in _PY_DEF_RE.finditer(text)]
    found += [(m.start(), m.group(1)) for m in _PY_CONST_RE.finditer(text)]
    return _ordered(found)


# ------------------------------------------------------------------------------- javascript

_JS_IMPORT_RE = re.compile(
    r"""(import|export|require)(?:"""
    r"""\s*\(\s*(['"`])(?P<call>[^'"`\n]+)\2\s*\)"""
    r"""|\s*(['"])(?P<bare>[^'"\n]+)\4"""
    r"""|\b(?P<clause>[^'"`;()]{0,2000}?)\bfrom\s*(['"])(?P<from>[^'"\n]+)\7)"""
)
_JS_DECL_RE = re.compile(
    r"^(?:export[ \t]+(?:default[ \t]+)?)?(?:declare[ \t]+)?(?:abstract[ \t]+)?(?:async[ \t]+)?"
    r"(?:function[ \t]*\*?[ \t]*|class[ \t]+)(?!extends\b)([A-Za-z_$][\w$]*)",
    re.M,
)
_JS_EXPORT_RE = re.compile(
    r"^export[ \t]+(?:declare[ \t]+)?(?:const[ \t]+enum|const|let|var|interface|type|enum|"
    r"namespace)[ \t]+([A-Za-z_$][\w$]*)",
    re.M,
)
_JS_EXPORT_LIST_RE = re.compile(r"^export[ \t]*(?:type[ \t]*)?\{([^}]*)\}(?![ \t]*from)", re.M)


def _js_resolve(spec: str, rel: str, root: str | None) -> str:
    """A relative specifier as a module path (extension dropped); bare specifiers unchanged."""
    if not (spec == "." or spec.startswith(("./", "../")) or spec == ".."):
        return spec
    target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), spec))
    if root and os.path.isdir(os.path.join(root, target)):
        for ext in (".ts", ".tsx", ".js", ".jsx", ".mjs"):
            if os.path.isfile(os.path.join(root, target, "index" + ext)):
                return target + "/index"
    return _JS_EXT_RE.sub("", target)


def _js_facts(text: str, rel: str, root: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(imports, symbols) of JavaScript/TypeScript; relative specifiers become module paths."""
    specs, symbols = _js_scan(text)
    return _unique(_js_resolve(spec, rel, root) for spec in specs), symbols


@lru_cache(maxsize=16)
def _js_scan(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(import specifiers as written, symbols) of JavaScript/TypeScript by pattern."""
    code = _strip_comments(text, "js")
    found = []
    for m in _JS_IMPORT_RE.finditer(code):
        kw, start = m.group(1), m.start()
        if start and (code[start - 1].isalnum() or code[start - 1] in "._$"):
            continue
        if m.group("call") and kw != "export":
            found.append((start, m.group("call").strip()))
        elif m.group("bare") and kw == "import":
            found.append((start, m.group("bare").strip()))
        elif m.group("from") and kw != "require":
            clause = m.group("clause").lstrip()
            if kw == "import" or clause.startswith(("*", "{", "type")):
                found.append((start, m.group("from").strip()))
    symbols = [
        (m.start(), m.group(1)) for rx in (_JS_DECL_RE, _JS_EXPORT_RE) for m in rx.finditer(code)
    ]
    for m in _JS_EXPORT_LIST_RE.finditer(code):
        for item in m.group(1).split(","):
            words = re.sub(r"^\s*type\s+", "", item).split()
            if words and words[-1] != "default":
                symbols.append((m.start(), words[-1]))
    return _ordered(found), _ordered(symbols)


# ----------------------------------------------------------------------------------------- go

_GO_PACKAGE_RE = re.compile(r"^[ \t]*package[ \t]+(\w+)", re.M)
_GO_BLOCK_RE = re.compile(r"^[ \t]*import[ \t]*\(([^)]*)\)", re.M)
_GO_SPEC_RE = re.compile(r"(?:[\w.]+[ \t]+)?[\"`]([^\"`\n]+)[\"`]")
_GO_SINGLE_RE = re.compile(r"^[ \t]*import[ \t]+(?:[\w.]+[ \t]+)?[\"`]([^\"`\n]+)[\"`]", re.M)
_GO_FUNC_RE = re.compile(r"^func[ \t]+(\w+)", re.M)
_GO_METHOD_RE = re.compile(
    r"^func[ \t]*\([ \t]*(?:\w+[ \t]+)?\*?[ \t]*(\w+)(?:\[[^\]]*\])?[ \t]*\)[ \t]*(\w+)", re.M
)
_GO_TYPE_RE = re.compile(r"^type[ \t]+(\w+)", re.M)
_GO_TYPE_BLOCK_RE = re.compile(r"^type[ \t]*\(\n(.*?)^\)", re.M | re.S)


@lru_cache(maxsize=16)
def _go_facts(text: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """(declared package, imports, symbols) of Go."""
    code = _strip_comments(text, "go")
    pkg = _GO_PACKAGE_RE.search(code)
    imports = [(m.start(), m.group(1)) for m in _GO_SINGLE_RE.finditer(code)]
    for block in _GO_BLOCK_RE.finditer(code):
        for m in _GO_SPEC_RE.finditer(block.group(1)):
            imports.append((block.start(1) + m.start(), m.group(1)))
    symbols = [(m.start(), m.group(1)) for m in _GO_FUNC_RE.finditer(code)]
    symbols += [(m.start(), f"{m.group(1)}.{m.group(2)}") for m in _GO_METHOD_RE.finditer(code)]
    symbols += [(m.start(), m.group(1)) for m in _GO_TYPE_RE.finditer(code)]
    for block in _GO_TYPE_BLOCK_RE.finditer(code):
        for m in re.finditer(r"^[ \t]+(\w+)[ \t]", block.group(1), re.M):
            symbols.append((block.start(1) + m.start(), m.group(1)))
    return (pkg.group(1) if pkg else None), _ordered(imports), _ordered(symbols)


def _go_module(rel: str, root: str | None, declared: str | None) -> str | None:
    """Import path of the file's directory: go.mod's module + subdirectory when a root is given."""
    d = posixpath.dirname(rel)
    if root and not (rel.startswith("/") or _has_drive(rel)):
        parts = d.split("/") if d else []
        for i in range(len(parts), -1, -1):
            gomod = os.path.join(root, *parts[:i], "go.mod")
            if os.path.isfile(gomod):
                name = _go_mod_name(gomod)
                if name:
                    return _join(name, *parts[i:])
    return d or declared


def _go_mod_name(gomod: str) -> str | None:
    """The ``module`` line of a go.mod."""
    try:
        with open(gomod, encoding="utf-8", errors="replace") as f:
            m = re.search(r"^module[ \t]+(\S+)", f.read(65536), re.M)
    except OSError:
        return None
    return m.group(1).strip('"`') if m else None


# --------------------------------------------------------------------------------------- rust

_VIS = r"(?:pub(?:[ \t]*\([^)]*\))?[ \t]+)?"
_RS_USE_RE = re.compile(r"^[ \t]*" + _VIS + r"use[ \t]+([^;]+);", re.M)
_RS_MOD_RE = re.compile(r"^[ \t]*" + _VIS + r"mod[ \t]+(\w+)[ \t]*;", re.M)
_RS_EXTERN_RE = re.compile(r"^[ \t]*extern[ \t]+crate[ \t]+(\w+)", re.M)
_RS_FN_RE = re.compile(
    r"^" + _VIS + r"(?:(?:const|async|unsafe|extern(?:[ \t]+\"[^\"]*\")?)[ \t]+)*fn[ \t]+(\w+)",
    re.M,
)
_RS_TYPE_RE = re.compile(
    r"^" + _VIS + r"(?:(?:unsafe|auto)[ \t]+)?(?:struct|enum|trait|union|type)[ \t]+(\w+)", re.M
)
_RS_IMPL_RE = re.compile(r"^(?:unsafe[ \t]+)?impl\b([^{;]*)", re.M)


def _rust_module(rel: str) -> tuple[str | None, bool]:
    """(``crate::a::b`` from the path under ``src/``, is the file a module root)."""
    dirs, name = _split(rel)
    stem = name.rsplit(".", 1)[0]
    if "src" not in dirs:
        return (
            ("crate", True)
            if dirs and dirs[-1] in ("tests", "benches", "examples")
            else (None, False)
        )
    sub = dirs[len(dirs) - dirs[::-1].index("src") :]
    if sub[:1] == ["bin"] or (not sub and stem in ("lib", "main")):
        return "crate", True
    if stem == "mod":
        return "::".join(["crate", *sub]), True
    return "::".join(["crate", *sub, stem]), False


def _expand_use(tree: str) -> list[str]:
    """``a::{c, d::{e, self}, f as g}`` → ``a::c``, ``a::d::e``, ``a::d``, ``a::f``."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    out: list[str] = []

    def items(s: str) -> list[str]:
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(s):
            depth += (ch == "{") - (ch == "}")
            if ch == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        return [p for p in parts if p]

    def walk(prefix: str, s: str) -> None:
        for item in items(s):
            if "{" in item:
                head, inner = item.split("{", 1)
                inner = inner[: inner.rfind("}")] if "}" in inner else inner
                walk(_rs_join(prefix, head.strip(":")), inner)
            elif item in ("self", "*"):
                out.append(prefix)
            else:
                path = _rs_join(prefix, item.strip(":"))
                out.append(re.sub(r"(?:^|::)(?:\*|self)$", "", path))

    walk("", tree.lstrip(":"))
    return [p for p in out if p]


def _rs_join(a: str, b: str) -> str:
    """``a::b`` ignoring empty parts."""
    return "::".join(x for x in (a, b) if x)


def _rs_resolve(path: str, module: str | None) -> str:
    """Resolve ``self::``/``super::`` against the file's module."""
    parts = path.split("::")
    if module is None or parts[0] not in ("self", "super"):
        return path
    base = module.split("::")
    if parts[0] == "self":
        return "::".join(base + parts[1:])
    while parts and parts[0] == "super":
        if len(base) <= 1:
            return path
        base, parts = base[:-1], parts[1:]
    return "::".join(base + parts)


@lru_cache(maxsize=16)
def _rust_facts(text: str, module: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(imports, symbols) of Rust by pattern."""
    code = _strip_comments(text, "rust")
    found = [
        (m.start(), _rs_resolve(p, module))
        for m in _RS_USE_RE.finditer(code)
        for p in _expand_use(m.group(1))
    ]
    found += [(m.start(), _rs_join(module or "", m.group(1))) for m in _RS_MOD_RE.finditer(code)]
    found += [(m.start(), m.group(1)) for m in _RS_EXTERN_RE.finditer(code)]
    symbols = [
        (m.start(), m.group(1)) for rx in (_RS_FN_RE, _RS_TYPE_RE) for m in rx.finditer(code)
    ]
    for m in _RS_IMPL_RE.finditer(code):
        header = m.group(1)
        while re.search(r"<[^<>]*>", header):
            header = re.sub(r"<[^<>]*>", "", header)
        header = re.split(r"\bwhere\b", header)[0]
        target = re.split(r"\bfor\b", header)[-1]
        names = re.findall(r"[A-Za-z_]\w*", target)
        names = [n for n in names if n not in ("dyn", "mut", "impl")]
        if names:
            symbols.append((m.start(), names[-1]))
    return _ordered(found), _ordered(symbols)


# ------------------------------------------------------------------------------ java and c#

_JAVA_PACKAGE_RE = re.compile(r"^[ \t]*package[ \t]+([\w.]+)[ \t]*;", re.M)
_JAVA_IMPORT_RE = re.compile(r"^[ \t]*import[ \t]+(static[ \t]+)?([\w.]+(?:\.\*)?)[ \t]*;", re.M)
_JAVA_TYPE_RE = re.compile(
    r"^[ \t]*(?:@[\w.]+(?:\([^)\n]*\))?[ \t]+)*(?:(?:public|protected|private|abstract|final|"
    r"static|sealed|non-sealed|strictfp)[ \t]+)*(?:class|interface|enum|record|@interface)"
    r"[ \t]+(\w+)",
    re.M,
)
_CS_NAMESPACE_RE = re.compile(r"^[ \t]*namespace[ \t]+([\w.]+)", re.M)
_CS_USING_RE = re.compile(
    r"^[ \t]*(?:global[ \t]+)?using[ \t]+(?:static[ \t]+)?(?:\w+[ \t]*=[ \t]*)?([\w.]+)"
    r"(?:<[^;\n]*>)?[ \t]*;",
    re.M,
)
_CS_TYPE_RE = re.compile(
    r"^[ \t]*(?:\[[^\]\n]*\][ \t]*)*(?:(?:public|internal|private|protected|static|abstract|"
    r"sealed|partial|readonly|unsafe|new|file|ref)[ \t]+)*(?:record[ \t]+(?:struct|class)|class|"
    r"interface|enum|record|struct)[ \t]+(\w+)",
    re.M,
)


def _top_level_types(code: str, decl: re.Pattern[str]) -> tuple[str, ...]:
    """Declarations not nested in any block other than a namespace (strings already blanked)."""
    events = [(m.start(), m.group(0)) for m in re.finditer(r"[{};]", code)]
    events += [(m.start(1), "decl:" + m.group(1)) for m in decl.finditer(code)]
    stack: list[bool] = []  # True for a namespace block
    boundary, names = 0, []
    for pos, what in sorted(events, key=lambda e: e[0]):
        if what.startswith("decl:"):
            if all(stack):
                names.append(what[5:])
            continue
        if what == "{":
            stack.append(re.search(r"\bnamespace\s+[\w.]+\s*$", code[boundary:pos]) is not None)
        elif what == "}" and stack:
            stack.pop()
        boundary = pos + 1
    return _unique(names)


@lru_cache(maxsize=16)
def _java_facts(text: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """(declared package, imports, top-level types) of Java."""
    code = _strip_comments(text, "c")
    pkg = _JAVA_PACKAGE_RE.search(code)
    imports = []
    for m in _JAVA_IMPORT_RE.finditer(code):
        name = m.group(2)
        if m.group(1) or name.endswith(".*"):
            name = name.rsplit(".", 1)[0]
        imports.append(name)
    types = _top_level_types(_strip_comments(text, "c", blank_strings=True), _JAVA_TYPE_RE)
    return (pkg.group(1) if pkg else None), _unique(imports), types


@lru_cache(maxsize=16)
def _csharp_facts(text: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """(namespace, usings, top-level types) of C#."""
    code = _strip_comments(text, "c")
    ns = _CS_NAMESPACE_RE.search(code)
    usings = _unique(m.group(1) for m in _CS_USING_RE.finditer(code))
    types = _top_level_types(_strip_comments(text, "c", blank_strings=True), _CS_TYPE_RE)
    return (ns.group(1) if ns else None), usings, types


def _main_type(stem: str, types: tuple[str, ...]) -> str:
    """The file's type: one named like the file, else the first declared, else the file name."""
    return stem if stem in types or not types else types[0]


def _java_package_from_path(dirs: list[str]) -> str | None:
    """Package from the directories under ``java/`` or ``src/`` when none is declared."""
    for marker in ("java", "src"):
        if marker in dirs:
            sub = dirs[len(dirs) - dirs[::-1].index(marker) :]
            return ".".join(sub) or None
    return None


# ------------------------------------------------------------------------------------ pairing

_PY_TEST_DIRS = {"tests", "test", "unit", "integration", "functional", "e2e"}
_NO_PAIR = {"__init__", "__main__", "conftest", "setup", "lib", "main", "mod"}
_JS_TEST_RE = re.compile(r"^(.+)\.(?:test|spec)\.([cm]?[jt]sx?)$")


def _pair_python(dirs: list[str], name: str, root: str | None) -> list[str]:
    """test_x.py / x_test.py ↔ x.py, mirroring tests/ against the package or src/."""
    stem = name[:-3] if name.endswith(".py") else name.rsplit(".", 1)[0]
    d = _join(*dirs)
    if stem.startswith("test_") or stem.endswith("_test"):
        base = stem[5:] if stem.startswith("test_") else stem[:-5]
        if not base:
            return []
        core = _join(*(p for p in dirs if p not in _PY_TEST_DIRS))
        out = [_join(core, base + ".py"), _join("src", core, base + ".py"), _join(d, base + ".py")]
        if root:
            for pattern in (("src", "*"), ("*",)):
                where = [glob.escape(root), *pattern, *map(glob.escape, core.split("/"))]
                hits = glob.glob(os.path.join(*where, glob.escape(base) + ".py"))
                out += sorted(_relative(h, root) for h in hits)
        # the nearest conftest.py above a test sets up how it runs (fixtures, plugins, paths);
        # one further up serves every test of the project
        conftests = [_join(*dirs[:n], "conftest.py") for n in range(len(dirs), -1, -1)]
        if root:
            conftests = [c for c in conftests if os.path.isfile(os.path.join(root, c))][:1]
        out += conftests
        return out
    if stem in _NO_PAIR:
        return []
    inner = dirs[1:] if dirs[:1] == ["src"] else dirs
    core = _join(*inner)
    test = f"test_{stem}.py"
    return [
        _join("tests", core, test),
        _join("tests", test),
        _join(d, test),
        _join(d, "tests", test),
        _join(d, f"{stem}_test.py"),
    ]


def _pair_js(dirs: list[str], name: str) -> list[str]:
    """foo.test.ts / foo.spec.ts / __tests__/foo.test.ts ↔ foo.ts."""
    d = _join(*dirs)
    m = _JS_TEST_RE.match(name)
    if m:
        base, ext = m.group(1), m.group(2)
        out = [_join(d, f"{base}.{ext}")]
        if dirs[-1:] == ["__tests__"]:
            out.append(_join(*dirs[:-1], f"{base}.{ext}"))
        if dirs[:1] in (["tests"], ["test"]):
            out += [_join("src", *dirs[1:], f"{base}.{ext}"), _join(*dirs[1:], f"{base}.{ext}")]
        return out
    if name.endswith(".d.ts") or "." not in name:
        return []
    base, ext = name.rsplit(".", 1)
    inner = dirs[1:] if dirs[:1] == ["src"] else dirs
    return [
        _join(d, f"{base}.test.{ext}"),
        _join(d, f"{base}.spec.{ext}"),
        _join(d, "__tests__", f"{base}.test.{ext}"),
        _join("tests", *inner, f"{base}.test.{ext}"),
    ]


def _pair_go(dirs: list[str], name: str) -> list[str]:
    """x_test.go ↔ x.go in the same directory."""
    stem = name[:-3]
    if stem.endswith("_test"):
        return [_join(*dirs, stem[:-5] + ".go")] if stem[:-5] else []
    return [_join(*dirs, stem + "_test.go")]


def _pair_rust(dirs: list[str], name: str) -> list[str]:
    """tests/x.rs (integration test) ↔ src/x.rs of the same crate."""
    stem = name[:-3]
    if stem in _NO_PAIR:
        return []
    if dirs[-1:] == ["tests"]:
        return [_join(*dirs[:-1], "src", name), _join(*dirs[:-1], "src", stem, "mod.rs")]
    if "src" in dirs:
        crate = dirs[: len(dirs) - dirs[::-1].index("src") - 1]
        return [_join(*crate, "tests", name), _join(*crate, "tests", f"{stem}_test.rs")]
    return []


def _pair_java(dirs: list[str], name: str) -> Sequence[str]:
    """FooTest.java / FooTests.java ↔ Foo.java, src/test/java ↔ src/main/java."""
    stem = name[:-5]
    swap = {"test": "main", "main": "test"}
    mirror = list(dirs)
    for i in range(len(dirs) - 1):
        if dirs[i] == "src" and dirs[i + 1] in swap:
            mirror[i + 1] = swap[dirs[i + 1]]
            break
    m = re.match(r"^(\w+?)(?:Tests?|IT)$", stem) or re.match(r"^Test([A-Z]\w*)$", stem)
    if m:
        return _unique([_join(*mirror, m.group(1) + ".java"), _join(*dirs, m.group(1) + ".java")])
    return _unique(
        [
            _join(*mirror, stem + "Test.java"),
            _join(*mirror, stem + "Tests.java"),
            _join(*dirs, stem + "Test.java"),
        ]
    )


def _pair_csharp(dirs: list[str], name: str) -> Sequence[str]:
    """FooTests.cs / FooTest.cs ↔ Foo.cs; tests/Proj.Tests/ ↔ src/Proj/."""
    stem = name[:-3]
    m = re.match(r"^(\w+?)Tests?$", stem)
    if m:
        src = [re.sub(r"\.(?:Unit|Integration)?Tests?$", "", p) for p in dirs]
        if src[:1] in (["tests"], ["test"]):
            src[0] = "src"
        return _unique([_join(*src, m.group(1) + ".cs"), _join(*dirs, m.group(1) + ".cs")])
    test_dirs = list(dirs)
    if test_dirs[:1] == ["src"] and len(test_dirs) > 1:
        test_dirs = ["tests", test_dirs[1] + ".Tests", *test_dirs[2:]]
    return _unique(
        [
            _join(*test_dirs, stem + "Tests.cs"),
            _join(*test_dirs, stem + "Test.cs"),
            _join(*dirs, stem + "Tests.cs"),
        ]
    )


_PAIRERS: dict[str, Callable[[list[str], str], Sequence[str]]] = {
    "go": _pair_go,
    "rust": _pair_rust,
    "java": _pair_java,
    "csharp": _pair_csharp,
    **{lang: _pair_js for lang in _JS_FAMILY},
}


def _paired(rel: str, language: str | None, root: str | None) -> tuple[str, ...]:
    """Test ↔ source counterparts; with a root, the existing ones if any exist."""
    dirs, name = _split(rel)
    if rel.startswith("/") or _has_drive(rel):
        root = None
    candidates: Sequence[str]
    if language == "python":
        candidates = _pair_python(dirs, name, root)
    elif language in _PAIRERS:
        candidates = _PAIRERS[language](dirs, name)
    else:
        return ()
    if rel.startswith("/"):
        candidates = ["/" + c for c in candidates]
    out = _unique(c for c in candidates if c != rel)
    if root:
        existing = tuple(c for c in out if os.path.isfile(os.path.join(root, c)))
        return existing or out
    return out


# -------------------------------------------------------------------------------- derive_file


def _dotted_parent(module: str | None, sep: str) -> str | None:
    """``a.b.c`` → ``a.b``; None at the top."""
    if not module or sep not in module:
        return None
    return module.rsplit(sep, 1)[0]


def derive_file(
    path: str, text: str | None, language_id: str | None = None, root: str | None = None
) -> FileFacts:
    """Module, package, imports, top-level symbols and test↔source pairing of one file."""
    rel = _relative(path, root)
    language = language_for(rel, language_id)
    dirs, name = _split(rel)
    stem = name.split(".", 1)[0] if name else ""
    src = (text or "")[:MAX_TEXT]
    module = package = None
    imports: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    if language == "python":
        module, is_init = _python_module(rel, root)
        package = module if is_init else _dotted_parent(module, ".")
        if text:
            base = package if module else None
            if module and package is None and not is_init:
                base = ""
            imports, symbols = _python_facts(src, base)
    elif language in _JS_FAMILY:
        module = _JS_EXT_RE.sub("", rel) or None
        package = posixpath.dirname(rel) or None
        if text:
            imports, symbols = _js_facts(src, rel, root)
    elif language == "go":
        declared, imports, symbols = _go_facts(src) if text else (None, (), ())
        module = _go_module(rel, root, declared)
        package = declared or (dirs[-1] if dirs else None)
    elif language == "rust":
        module, is_root = _rust_module(rel)
        package = module if is_root else _dotted_parent(module, "::")
        if text:
            imports, symbols = _rust_facts(src, module)
    elif language in ("java", "csharp"):
        facts = _java_facts if language == "java" else _csharp_facts
        declared, imports, symbols = facts(src) if text else (None, (), ())
        package = declared or (_java_package_from_path(dirs) if language == "java" else None)
        module = _join(package or "", _main_type(stem, symbols)).replace("/", ".") or None
    return FileFacts(
        path=rel,
        language=language,
        module=module,
        package=package,
        imports=imports,
        symbols=symbols,
        paired=_paired(rel, language, root),
    )


# ------------------------------------------------------------------------------------ branches

_TRUNKS = {"main", "master", "develop", "development", "dev", "trunk", "head", "staging"}
_TYPE_SEGMENTS = {
    "feature", "features", "feat", "fix", "fixes", "bugfix", "bugfixes", "hotfix", "hotfixes",
    "bug", "bugs", "chore", "chores", "refactor", "refactoring", "release", "releases", "deploy",
    "docs", "doc", "test", "tests", "perf", "style", "ci", "build", "revert", "wip", "spike",
    "experiment", "exp", "task", "story", "improvement", "enhancement", "review", "pr", "pull",
    "dependabot", "renovate", "dev",
}  # fmt: skip
_USER_SEGMENTS = {"users", "user", "u"}
_NOISE = {
    "feature", "feat", "fix", "fixes", "fixed", "bugfix", "hotfix", "bug", "chore", "refactor",
    "wip", "tmp", "temp", "misc", "the", "and", "or", "of", "to", "for", "in", "on", "at", "by",
    "with", "from", "into", "is", "be", "it", "an", "my", "our", "new", "add", "adds", "added",
    "update", "updates", "updated", "remove", "removes", "improve", "change", "changes", "make",
    "use", "implement", "initial", "cleanup", "minor", "more", "some", "stuff", "try", "attempt",
}  # fmt: skip
_BRANCH_WORD_RE = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9]+-\d+(?![0-9])|[A-Za-z0-9]+")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def branch_tokens(branch: str | None) -> tuple[str, ...]:
    """Topic words of a branch: ``feature/auth-refresh`` → ``("auth", "refresh")``."""
    if not branch:
        return ()
    name = re.sub(r"^(refs/heads/|refs/remotes/[^/]+/|origin/|upstream/)", "", branch.strip())
    if name.lower() in _TRUNKS:
        return ()
    segments = [s for s in name.split("/") if s]
    for i in range(len(segments) - 2, -1, -1):
        if segments[i].lower() in _TYPE_SEGMENTS:
            segments = segments[i + 1 :]
            break
    if len(segments) > 2 and segments[0].lower() in _USER_SEGMENTS:
        segments = segments[2:]
    words: list[str] = []
    for m in _BRANCH_WORD_RE.finditer("/".join(segments)):
        chunk = m.group(0)
        if "-" in chunk:
            words.append(chunk.lower())
            continue
        for w in _CAMEL_RE.split(chunk):
            w = w.lower()
            if len(w) > 1 and not w.isdigit() and w not in _NOISE:
                words.append(w)
    return _unique(words)


# ------------------------------------------------------------------------------------- errors

_EXT = (
    r"py|pyi|js|mjs|cjs|jsx|ts|mts|cts|tsx|go|rs|java|kt|cs|rb|php|c|h|cc|cpp|hpp|swift|json|"
    r"ya?ml|toml|md|txt|cfg|ini|lock|html|css|scss|vue|svelte|sql|sh"
)
_SIG_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), r)
    for p, r in (
        (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>"),
        (r"\bfile://\S+", "<path>"),
        (r"\"[^\"]*\"|`[^`]*`|“[^”]*”|‘[^’]*’|(?<!\w)'[^']*'(?!\w)", "<v>"),
        (r"(?<![\w])[a-z]:[\\/][^\s'\"`,;:()<>]*|\\\\[^\s'\"`,;:()<>]+", "<path>"),
        (r"(?<![\w.<>/~-])(?:~|\.{1,2})?/(?:[\w.@+~-]+/)*[\w.@+~-]+/?", "<path>"),
        (rf"(?<![\w./-])[\w.@+-]+(?:/[\w.@+-]+)+\.(?:{_EXT})(?![\w])", "<path>"),
        (rf"(?<![\w./<-])[\w@+-][\w.@+-]*\.(?:{_EXT})(?![\w])", "<path>"),
        (r"<path>(?:(?::\d+){1,2}|\(\d+(?:,\d+)?\))+", "<path>"),
        (r":\d+:\d+\b", ""),
        (r"\b0x[0-9a-f]+\b", "<hex>"),
        (r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", "<hex>"),
        (r"\btmp(?=[a-z0-9_]*\d)[a-z0-9_]{5,}\b", "<tmp>"),
        (r"(?<![\w])\d+(?:\.\d+)*(?![\w])", "<n>"),
    )
)
_SIG_TOKEN = r"[a-z0-9_@][a-z0-9_@/\-]*"
_SIG_PREFIX_RE = re.compile(rf"^(?:{_SIG_TOKEN}:)?{_SIG_TOKEN}:(?: |$)")
MAX_SIGNATURE = 300


def _collapse(s: str) -> str:
    """Lower-case, single spaces, stripped."""
    return re.sub(r"\s+", " ", s).strip().lower()


def error_signature(message: str, code: str | None = None, source: str | None = None) -> str:
    """A normalised error message, prefixed ``source:code:``, equal across files and runs.

    Paths, positions, quoted values, addresses, UUIDs, temp names and numbers become
    placeholders; the result is lower-case and ``error_signature(sig) == sig``.
    """
    s = _collapse(message or "")
    head = ""
    m = _SIG_PREFIX_RE.match(s)
    if m:
        head, s = m.group(0), s[m.end() :]
    for rx, repl in _SIG_RULES:
        s = rx.sub(repl, s)
    s = _collapse(head + s).rstrip(" .")
    src, cod = (
        re.sub(r"[^a-z0-9_@/\-]+", "-", _collapse(x or "")).strip("-/") for x in (source, code)
    )
    prefix = ":".join(x for x in (src, cod) if x)
    if prefix and not (s == prefix + ":" or s.startswith(prefix + ": ")):
        s = f"{prefix}: {s}" if s else prefix + ":"
    if len(s) > MAX_SIGNATURE:
        s = s[:MAX_SIGNATURE].rsplit(" ", 1)[0].rstrip(" .")
    return s
