"""Derivations: module, imports, symbols, pairing per language; branch tokens; signatures."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from predictive.file_facts import (
    FileFacts,
    branch_tokens,
    derive_file,
    error_signature,
    language_for,
)


def _touch(root: Path, *rels: str, text: str = "") -> None:
    for rel in rels:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


# ---------------------------------------------------------------------------------- language


@pytest.mark.parametrize(
    ("path", "language_id", "expected"),
    [
        ("a.py", None, "python"),
        ("a.pyi", None, "python"),
        ("a.js", None, "javascript"),
        ("a.mjs", None, "javascript"),
        ("a.jsx", None, "javascriptreact"),
        ("a.ts", None, "typescript"),
        ("a.d.ts", None, "typescript"),
        ("a.tsx", None, "typescriptreact"),
        ("a.go", None, "go"),
        ("a.rs", None, "rust"),
        ("A.java", None, "java"),
        ("A.cs", None, "csharp"),
        ("A.CS", None, "csharp"),
        ("x.cpp", None, "cpp"),
        ("Dockerfile", None, "dockerfile"),
        ("notes.xyz", None, None),
        ("noext", None, None),
        ("a.txt", "python", "python"),
        ("a", "TypeScriptReact", "typescriptreact"),
        ("a", "golang", "go"),
        ("a", "c#", "csharp"),
        ("a.py", "plaintext", "python"),
        ("a", "plaintext", None),
        ("a.weird", "cobol", "cobol"),
        ("C:\\proj\\src\\Main.java", None, "java"),
    ],
)
def test_language_for(path: str, language_id: str | None, expected: str | None) -> None:
    assert language_for(path, language_id) == expected


def test_file_facts_is_frozen() -> None:
    facts = derive_file("a.py", "x = 1")
    assert isinstance(facts, FileFacts)
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.module = "b"  # type: ignore[misc]


# -------------------------------------------------------------------------------------- python

PY = """\
from __future__ import annotations
import os, json as j
import payments.config
from . import utils
from .models import Charge
from ..core.http import get
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_RETRIES = 3
_DEFAULT_TIMEOUT: float = 2.5
lowercase = 1

def charge(amount: int) -> None:
    import decimal

async def refund() -> None:
    pass

class Client:
    def method(self) -> None:
        pass
"""


@pytest.mark.parametrize(
    ("path", "module", "package"),
    [
        ("src/payments/stripe_client.py", "payments.stripe_client", "payments"),
        ("src/payments/__init__.py", "payments", "payments"),
        ("payments/api/views.py", "payments.api.views", "payments.api"),
        ("services/api/src/app/main.py", "app.main", "app"),
        ("manage.py", "manage", None),
        ("__init__.py", None, None),
        ("tests/test_stripe_client.py", "tests.test_stripe_client", "tests"),
    ],
)
def test_python_module_and_package(path: str, module: str | None, package: str | None) -> None:
    facts = derive_file(path, None)
    assert (facts.language, facts.module, facts.package) == ("python", module, package)


def test_python_imports_symbols_and_relative_resolution() -> None:
    facts = derive_file("src/payments/stripe_client.py", PY)
    assert facts.imports == (
        "os",
        "json",
        "payments.config",
        "payments",
        "payments.models",
        "core.http",
        "typing",
        "collections.abc",
        "decimal",
    )
    assert facts.symbols == ("MAX_RETRIES", "_DEFAULT_TIMEOUT", "charge", "refund", "Client")


def test_python_relative_imports_in_a_package_init() -> None:
    facts = derive_file("src/payments/__init__.py", "from .client import Client\nfrom . import x\n")
    assert facts.imports == ("payments.client", "payments")


def test_python_relative_import_beyond_the_top_stays_relative() -> None:
    facts = derive_file("payments/client.py", "from ...far import x\nfrom .near import y\n")
    assert facts.imports == ("...far", "payments.near")


def test_python_syntax_error_falls_back_to_patterns() -> None:
    half_typed = (
        "import os\n"
        "from .models import (\n"
        "import sys, re as regex\n"
        "from payments.gateway import Gate\n"
        "def ok(:\n"
        "class Broken(\n"
        "LIMIT = 10\n"
        "    def nested(self): pass\n"
    )
    facts = derive_file("src/payments/stripe_client.py", half_typed)
    assert facts.imports == ("os", "payments.models", "sys", "re", "payments.gateway")
    assert facts.symbols == ("ok", "Broken", "LIMIT")


def test_python_parse_emits_no_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        facts = derive_file("a.py", 'import re\nPATTERN = re.compile("\\d+")\n')
    assert facts.imports == ("re",) and facts.symbols == ("PATTERN",)


def test_python_module_from_packages_on_disk(tmp_path: Path) -> None:
    _touch(tmp_path, "backend/app/__init__.py", "backend/app/api/__init__.py")
    _touch(tmp_path, "backend/app/api/routes.py", text="from ..models import User\n")
    facts = derive_file(
        str(tmp_path / "backend/app/api/routes.py"),
        "from ..models import User\n",
        root=str(tmp_path),
    )
    assert facts.path == "backend/app/api/routes.py"
    assert (facts.module, facts.package) == ("app.api.routes", "app.api")
    assert facts.imports == ("app.models",)


def test_none_text_and_unknown_language_give_empty_facts() -> None:
    facts = derive_file("src/payments/stripe_client.py", None)
    assert facts.module == "payments.stripe_client"
    assert (facts.imports, facts.symbols) == ((), ())
    unknown = derive_file("notes/readme.xyz", "import os\n\x00\xff garbage")
    assert unknown == FileFacts("notes/readme.xyz", None, None, None, (), (), ())
    null_bytes = derive_file("a.py", "import os\x00\nimport sys\n")
    assert null_bytes.imports == ("os", "sys")


def test_paths_are_made_relative_to_the_root(tmp_path: Path) -> None:
    root = str(tmp_path)
    assert derive_file(f"{root}/src/a.py", None, root=root).path == "src/a.py"
    assert derive_file("file://" + f"{root}/src/a.py", None, root=root).path == "src/a.py"
    assert derive_file("./src/a.py", None, root=root).path == "src/a.py"
    assert derive_file("/elsewhere/b.py", None, root=root).path == "/elsewhere/b.py"
    assert derive_file("src\\pkg\\a.py", None).path == "src/pkg/a.py"
    windows = derive_file("C:\\proj\\src\\pkg\\a.py", None, root="C:\\proj")
    assert (windows.path, windows.module) == ("src/pkg/a.py", "pkg.a")


# ------------------------------------------------------------------------------ javascript

JS = """\
import React, { useState } from 'react';
import {
  a,
  b,
} from "../lib/util.js";
import * as path from "node:path";
import './button.css';
// import fake from 'commented-out'
/* import alsoFake from 'block-comment' */
const lodash = require('lodash');
const lazy = await import("./lazy");
export * from './reexport';
export { helper } from './helpers';
const url = "http://example.com"; // a string with // inside

export default function Button() {}
export async function load() {}
function internal() {}
export class Store {}
class Hidden extends Store {}
export const SIZE = 3;
const notExported = 4;
export { notExported as visible, internal };
"""


def test_javascript_imports() -> None:
    facts = derive_file("web/src/components/Button.jsx", JS)
    assert facts.language == "javascriptreact"
    assert facts.imports == (
        "react",
        "web/src/lib/util",
        "node:path",
        "web/src/components/button.css",
        "lodash",
        "web/src/components/lazy",
        "web/src/components/reexport",
        "web/src/components/helpers",
    )


def test_javascript_symbols_module_and_package() -> None:
    facts = derive_file("web/src/components/Button.jsx", JS)
    assert facts.symbols == (
        "Button",
        "load",
        "internal",
        "Store",
        "Hidden",
        "SIZE",
        "visible",
    )
    assert (facts.module, facts.package) == ("web/src/components/Button", "web/src/components")


def test_javascript_relative_import_of_a_directory_resolves_to_its_index(tmp_path: Path) -> None:
    _touch(tmp_path, "src/components/index.ts", "src/app.ts")
    facts = derive_file(
        str(tmp_path / "src/app.ts"),
        "import { Button } from './components';\nimport x from './missing';\n",
        root=str(tmp_path),
    )
    assert facts.imports == ("src/components/index", "src/missing")


TS = """\
import type { User } from './models/user';
import { type Session, login } from '@auth/core';
import fs = require('fs');
export type { Token } from "./token";
import type * as Types from './types'

export interface Props { size: number }
export type Size = 'sm' | 'lg';
export enum Color { Red }
export const enum Flag { A }
export abstract class Base {}
export declare function declared(): void;
export default class {}
"""


def test_typescript_type_only_imports_and_symbols() -> None:
    facts = derive_file("src/auth/session.ts", TS)
    assert facts.language == "typescript"
    assert facts.imports == (
        "src/auth/models/user",
        "@auth/core",
        "fs",
        "src/auth/token",
        "src/auth/types",
    )
    assert facts.symbols == ("Props", "Size", "Color", "Flag", "Base", "declared")
    assert (facts.module, facts.package) == ("src/auth/session", "src/auth")


def test_typescript_declaration_file_module() -> None:
    facts = derive_file("types/globals.d.ts", "export interface Window {}\n")
    assert facts.module == "types/globals"
    assert facts.symbols == ("Window",)


# ----------------------------------------------------------------------------------------- go

GO = """\
// Package server serves.
package server

import "fmt"
import (
    "net/http"
    log "github.com/sirupsen/logrus"
    _ "embed"
    . "strings"
    // "commented/out"
)

type Server struct{ addr string }

type (
    Handler func(w http.ResponseWriter)
    Option  int
)

func New() *Server { return &Server{} }

func (s *Server) Start() error { return nil }

func (List[T]) Len() int { return 0 }
"""


def test_go_imports_symbols_and_package() -> None:
    facts = derive_file("internal/server/server.go", GO)
    assert facts.language == "go"
    assert facts.imports == (
        "fmt",
        "net/http",
        "github.com/sirupsen/logrus",
        "embed",
        "strings",
    )
    assert facts.symbols == ("Server", "Handler", "Option", "New", "Server.Start", "List.Len")
    assert (facts.module, facts.package) == ("internal/server", "server")


def test_go_module_path_comes_from_go_mod(tmp_path: Path) -> None:
    _touch(tmp_path, "go.mod", text="module github.com/acme/shop\n\ngo 1.22\n")
    facts = derive_file(str(tmp_path / "internal/server/server.go"), GO, root=str(tmp_path))
    assert facts.module == "github.com/acme/shop/internal/server"
    root_file = derive_file(str(tmp_path / "main.go"), "package main\n", root=str(tmp_path))
    assert (root_file.module, root_file.package) == ("github.com/acme/shop", "main")


def test_go_without_text_uses_the_directory() -> None:
    facts = derive_file("pkg/auth/token.go", None)
    assert (facts.module, facts.package, facts.imports) == ("pkg/auth", "auth", ())


# --------------------------------------------------------------------------------------- rust

RUST = """\
use std::collections::{HashMap, HashSet};
use crate::models::{Charge, refund::{self, Refund as R}};
use super::config::*;
use self::inner::Thing;
pub use ::serde_json::Value;
// use commented::Out;
pub mod inner;
mod tests;
extern crate serde;

pub fn charge() {}
pub(crate) async fn refund<'a>(x: &'a str) {}
struct Client;
pub enum State { A }
pub trait Gateway {}
type Result<T> = std::result::Result<T, Error>;
impl<'a, T: Into<Vec<u8>>> Gateway for Wrapper<'a, T> where T: Clone {}
impl Client {
    fn method(&self) {}
}
"""


def test_rust_use_trees_mods_and_extern_crates() -> None:
    facts = derive_file("crates/core/src/payments/client.rs", RUST)
    assert facts.language == "rust"
    assert facts.imports == (
        "std::collections::HashMap",
        "std::collections::HashSet",
        "crate::models::Charge",
        "crate::models::refund",
        "crate::models::refund::Refund",
        "crate::payments::config",
        "crate::payments::client::inner::Thing",
        "serde_json::Value",
        "crate::payments::client::inner",
        "crate::payments::client::tests",
        "serde",
    )
    assert facts.symbols == ("charge", "refund", "Client", "State", "Gateway", "Result", "Wrapper")


@pytest.mark.parametrize(
    ("path", "module", "package"),
    [
        ("src/lib.rs", "crate", "crate"),
        ("src/main.rs", "crate", "crate"),
        ("src/payments/mod.rs", "crate::payments", "crate::payments"),
        ("src/payments/client.rs", "crate::payments::client", "crate::payments"),
        ("src/util.rs", "crate::util", "crate"),
        ("tests/api.rs", "crate", "crate"),
        ("build.rs", None, None),
    ],
)
def test_rust_module_from_path(path: str, module: str | None, package: str | None) -> None:
    facts = derive_file(path, None)
    assert (facts.module, facts.package) == (module, package)


def test_rust_mod_declarations_in_the_crate_root() -> None:
    facts = derive_file("src/lib.rs", "pub mod payments;\nuse self::payments::Client;\n")
    assert facts.imports == ("crate::payments", "crate::payments::Client")


# --------------------------------------------------------------------------------------- java

JAVA = """\
package com.acme.pay;

import java.util.List;
import java.util.concurrent.*;
import static org.junit.Assert.assertEquals;
import static com.acme.Util.*;
// import com.fake.Commented;

@Service
public final class ChargeService {
    private static class Inner {}
    interface Callback {}
    String s = "class NotAType {";
}

enum Mode { A, B }
record Pair(int a, int b) {}
"""


def test_java_package_imports_and_types() -> None:
    facts = derive_file("src/main/java/com/acme/pay/ChargeService.java", JAVA)
    assert facts.language == "java"
    assert facts.imports == (
        "java.util.List",
        "java.util.concurrent",
        "org.junit.Assert",
        "com.acme.Util",
    )
    assert facts.symbols == ("ChargeService", "Mode", "Pair")
    assert (facts.module, facts.package) == ("com.acme.pay.ChargeService", "com.acme.pay")


def test_java_without_a_package_declaration_uses_the_path() -> None:
    facts = derive_file("src/main/java/com/acme/Tool.java", "public class Tool {}\n")
    assert (facts.module, facts.package) == ("com.acme.Tool", "com.acme")
    loose = derive_file("Tool.java", "class Tool {}\n")
    assert (loose.module, loose.package) == ("Tool", None)


# ----------------------------------------------------------------------------------------- c#

CSHARP = """\
using System;
using static System.Math;
using Json = Newtonsoft.Json.JsonConvert;
using Map = System.Collections.Generic.Dictionary<string, int>;
global using System.Linq;
// using Fake.Commented;

namespace Acme.Pay
{
    [Serializable]
    public sealed partial class ChargeService
    {
        void Run()
        {
            using var stream = File.Open("x");
            using (var other = Open()) { }
            var s = "{ not a block";
        }
        private class Nested {}
    }

    internal record Charge(int Amount);
    public interface IGateway {}
    public readonly struct Money {}
}
"""


def test_csharp_namespace_usings_and_types() -> None:
    facts = derive_file("src/Acme.Pay/ChargeService.cs", CSHARP)
    assert facts.language == "csharp"
    assert facts.imports == (
        "System",
        "System.Math",
        "Newtonsoft.Json.JsonConvert",
        "System.Collections.Generic.Dictionary",
        "System.Linq",
    )
    assert facts.symbols == ("ChargeService", "Charge", "IGateway", "Money")
    assert (facts.module, facts.package) == ("Acme.Pay.ChargeService", "Acme.Pay")


def test_csharp_file_scoped_namespace_and_type_named_unlike_the_file() -> None:
    text = "namespace Acme.Util;\n\npublic static class StringExtensions\n{\n}\n"
    facts = derive_file("src/Util/Extensions.cs", text)
    assert facts.symbols == ("StringExtensions",)
    assert (facts.module, facts.package) == ("Acme.Util.StringExtensions", "Acme.Util")


# ------------------------------------------------------------------------------------ pairing


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_stripe_client.py", ["stripe_client.py", "src/stripe_client.py"]),
        (
            "tests/payments/test_stripe_client.py",
            ["payments/stripe_client.py", "src/payments/stripe_client.py"],
        ),
        ("payments/test_api.py", ["payments/api.py"]),
        ("payments/api_test.py", ["payments/api.py"]),
        (
            "src/payments/stripe_client.py",
            ["tests/payments/test_stripe_client.py", "tests/test_stripe_client.py"],
        ),
        ("internal/auth/token_test.go", ["internal/auth/token.go"]),
        ("internal/auth/token.go", ["internal/auth/token_test.go"]),
        ("src/auth/login.test.ts", ["src/auth/login.ts"]),
        ("src/auth/login.spec.ts", ["src/auth/login.ts"]),
        ("src/auth/__tests__/login.test.tsx", ["src/auth/login.tsx"]),
        ("src/auth/login.ts", ["src/auth/login.test.ts", "src/auth/login.spec.ts"]),
        ("src/util.js", ["src/util.test.js"]),
        (
            "src/test/java/com/acme/ChargeServiceTest.java",
            ["src/main/java/com/acme/ChargeService.java"],
        ),
        (
            "src/test/java/com/acme/ChargeServiceTests.java",
            ["src/main/java/com/acme/ChargeService.java"],
        ),
        (
            "src/main/java/com/acme/ChargeService.java",
            ["src/test/java/com/acme/ChargeServiceTest.java"],
        ),
        ("tests/Acme.Pay.Tests/ChargeServiceTests.cs", ["src/Acme.Pay/ChargeService.cs"]),
        ("Pay/ChargeServiceTest.cs", ["Pay/ChargeService.cs"]),
        ("src/Acme.Pay/ChargeService.cs", ["tests/Acme.Pay.Tests/ChargeServiceTests.cs"]),
        ("tests/api.rs", ["src/api.rs"]),
        ("src/api.rs", ["tests/api.rs"]),
    ],
)
def test_pairing_candidates(path: str, expected: list[str]) -> None:
    paired = derive_file(path, None).paired
    for candidate in expected:
        assert candidate in paired, (candidate, paired)
    assert path not in paired


@pytest.mark.parametrize(
    "path",
    ["src/payments/__init__.py", "tests/conftest.py", "src/lib.rs", "README.md", "types/a.d.ts"],
)
def test_files_without_a_counterpart(path: str) -> None:
    assert derive_file(path, None).paired == ()


def test_pairing_prefers_existing_files_under_the_root(tmp_path: Path) -> None:
    _touch(tmp_path, "src/payments/stripe_client.py", "tests/test_stripe_client.py")
    root = str(tmp_path)
    assert derive_file(str(tmp_path / "tests/test_stripe_client.py"), None, root=root).paired == (
        "src/payments/stripe_client.py",
    )
    assert derive_file(str(tmp_path / "src/payments/stripe_client.py"), None, root=root).paired == (
        "tests/test_stripe_client.py",
    )
    # No counterpart on disk: the plausible candidates, not an empty answer.
    lonely = derive_file(str(tmp_path / "src/payments/refunds.py"), None, root=root).paired
    assert "tests/payments/test_refunds.py" in lonely


# ------------------------------------------------------------------------------------ branches


@pytest.mark.parametrize(
    ("branch", "tokens"),
    [
        ("feature/auth-refresh", ("auth", "refresh")),
        ("fix/JIRA-123_login_timeout", ("jira-123", "login", "timeout")),
        ("feat/addLoginButton", ("login", "button")),
        ("alice/feature/payment-retries", ("payment", "retries")),
        ("users/alice/oauth-flow", ("oauth", "flow")),
        ("hotfix-login-login", ("login",)),
        ("refs/heads/bugfix/the-cache-of-sessions", ("cache", "sessions")),
        ("origin/refactor/split_models", ("split", "models")),
        ("release/1.2.3", ()),
        ("main", ()),
        ("master", ()),
        ("develop", ()),
        ("", ()),
        (None, ()),
    ],
)
def test_branch_tokens(branch: str | None, tokens: tuple[str, ...]) -> None:
    assert branch_tokens(branch) == tokens


# -------------------------------------------------------------------------------------- errors

SAME_ERRORS = [
    [
        'Cannot access attribute "foo" for class "Bar"',
        'Cannot access attribute "baz_qux" for class "Other"',
        'cannot  access attribute "x"\n  for class "Y".',
    ],
    [
        "Property 'user' does not exist on type 'Session'.",
        "Property 'token' does not exist on type 'Request'.",
    ],
    [
        'File "/home/alice/proj/src/app.py", line 42, in handler',
        'File "C:\\Users\\bob\\proj\\app.py", line 7, in handler',
    ],
    [
        "/home/alice/proj/src/app.py:42:7: undefined name 'x'",
        "/tmp/build/other/app2.py:3:1: undefined name 'yy'",
        "src/app.py:10:2: undefined name 'zz'",
        "C:\\work\\app.py:1:1: undefined name 'q'",
    ],
    [
        "<Foo object at 0x7f3a2b1c9d00> is not JSON serializable",
        "<Foo object at 0x10fe2c3d0> is not JSON serializable",
    ],
    [
        "request 3f2b8c1e-9a4d-4c6b-8e2f-1a2b3c4d5e6f failed after 3 retries",
        "request 00000000-1111-2222-3333-444444444444 failed after 12 retries",
    ],
    [
        "No such file: /tmp/tmpab12cd9x/out.json",
        "No such file: /var/folders/xy/T/tmp0q9w8e7r/out.json",
    ],
    [
        "cannot find value `count` in this scope",
        "cannot find value `total_items` in this scope",
    ],
    [
        "Program.cs(12,5): error CS0103: The name 'foo' does not exist in the current context",
        "Other.cs(1,1): error CS0103: The name 'barBaz' does not exist in the current context",
    ],
]


@pytest.mark.parametrize("variants", SAME_ERRORS)
def test_error_signature_equal_for_variants(variants: list[str]) -> None:
    signatures = {error_signature(v) for v in variants}
    assert len(signatures) == 1, signatures


def test_error_signature_differs_for_different_errors() -> None:
    signatures = [error_signature(group[0]) for group in SAME_ERRORS]
    signatures += [
        error_signature("name 'x' is not defined"),
        error_signature("module 'x' has no attribute 'y'"),
    ]
    assert len(set(signatures)) == len(signatures)
    msg = 'Cannot access attribute "foo" for class "Bar"'
    assert error_signature(msg, "reportAttributeAccessIssue", "pyright") != error_signature(
        msg, "reportOptionalMemberAccess", "pyright"
    )
    assert error_signature(msg, source="pyright") != error_signature(msg, source="mypy")


def test_error_signature_format_with_source_and_code() -> None:
    sig = error_signature(
        'Cannot access attribute "foo" for class "Bar"', "reportAttributeAccessIssue", "Pyright"
    )
    assert sig == "pyright:reportattributeaccessissue: cannot access attribute <v> for class <v>"
    assert error_signature("Unused variable", source="ruff") == "ruff: unused variable"
    assert error_signature("Property 'x' missing", code="2339") == "2339: property <v> missing"
    assert error_signature("line too long (120 > 100)") == "line too long (<n> > <n>)"
    assert error_signature("") == ""
    assert error_signature("", "E501", "ruff") == "ruff:e501:"


IDEMPOTENT_CASES = [
    (msg, code, source)
    for group in SAME_ERRORS
    for msg in group
    for code, source in ((None, None), ("2339", "ts"), ("E0308", "rustc"), ("no-undef", None))
] + [
    ("undefined: x", None, "go"),
    ("./main.go:12:3: undefined: x", None, None),
    ("error[E0308]: mismatched types", None, None),
    ("12: oops 3:4", None, None),
    ("x " * 400, None, None),
    ("don't 'quote' me ''", None, None),
]


@pytest.mark.parametrize(("message", "code", "source"), IDEMPOTENT_CASES)
def test_error_signature_is_idempotent(message: str, code: str | None, source: str | None) -> None:
    sig = error_signature(message, code, source)
    assert error_signature(sig) == sig
    assert error_signature(sig, code, source) == sig
    assert error_signature(message, code, source) == sig  # deterministic
    assert len(sig) <= 300


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("ab xyZ019_-./\\:'\"`()<>,\n@~0xfEtmp")) | st.characters(),
        max_size=80,
    )
)
def test_error_signature_is_idempotent_for_any_text(message: str) -> None:
    sig = error_signature(message)
    assert error_signature(sig) == sig
    assert sig == sig.lower()


def test_a_python_test_is_paired_with_the_nearest_conftest_above_it(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "src/payments/stripe_client.py",
        "tests/conftest.py",
        "tests/unit/conftest.py",
        "tests/unit/test_stripe_client.py",
        "tests/other/conftest.py",
    )
    paired = derive_file(
        str(tmp_path / "tests/unit/test_stripe_client.py"), None, root=str(tmp_path)
    ).paired
    assert paired == (
        "src/payments/stripe_client.py",
        "tests/unit/conftest.py",
    )
    # a source file is not set up by a conftest
    source = derive_file(str(tmp_path / "src/payments/stripe_client.py"), None, root=str(tmp_path))
    assert not any(p.endswith("conftest.py") for p in source.paired)
