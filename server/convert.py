"""Typed, forgiving conversion of JSON objects (settings, command arguments, notification
parameters) into frozen dataclasses, with cattrs.

JSON keys are camelCase (``maxItems``) and Python fields snake_case (``max_items``); both
spellings are accepted, unknown keys are ignored. Values are checked strictly — ``true`` is
not an integer, ``"abc"`` is not a list — and every problem is reported with the camelCase
path of the key it concerns (``budget: expected an integer, got 'lots'``).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, get_args, get_origin

import cattrs
from cattrs.gen import make_dict_structure_fn, override

from predictive.operations.errors import Invalid

T = TypeVar("T")


class ConversionError(ValueError):
    """One or more values did not fit; ``problems`` are ``(camelCase path, message)`` pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{p}: {m}" if p else m for p, m in problems))


def camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(w[:1].upper() + w[1:] for w in rest)


def _snake_to_camel_keys(value: Any, cls: type) -> Any:
    """Accept ``max_items`` for ``maxItems``; the camelCase spelling wins when both appear."""
    if not isinstance(value, Mapping):
        return value
    names = {f.name for f in dataclasses.fields(cls)}
    out = dict(value)
    for key in value:
        if isinstance(key, str) and "_" in key and key in names:
            out.setdefault(camel(key), value[key])
    return out


def _join(key: str, path: str) -> str:
    """``key`` + ``path`` as one path: ``tags`` + ``[1]`` → ``tags[1]``, ``a`` + ``b`` → ``a.b``."""
    if not path:
        return key
    if not key:
        return path
    return key + path if path.startswith("[") else f"{key}.{path}"


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _int(value: Any, _: type) -> int:
    if isinstance(value, bool):
        raise Invalid(f"expected an integer, got {_describe(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise Invalid(f"expected an integer, got {_describe(value)}")


def _float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(f"expected a number, got {_describe(value)}")
    if not math.isfinite(value):
        raise Invalid(f"expected a finite number, got {_describe(value)}")
    return float(value)


def _str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise Invalid(f"expected a string, got {_describe(value)}")
    return value


def _bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {_describe(value)}")
    return value


def _is_literal(t: Any) -> bool:
    return get_origin(t) is Literal


def _literal_hook(t: Any) -> Any:
    allowed = get_args(t)

    def structure(value: Any, _: type) -> Any:
        for a in allowed:
            if value == a and type(value) is type(a):
                return a
            if isinstance(a, str) and isinstance(value, str) and value.lower() == a.lower():
                return a
        raise Invalid(f"must be one of {', '.join(map(str, allowed))}; got {_describe(value)}")

    return structure


def _is_enum(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, enum.Enum)


def _enum_hook(t: type[enum.Enum]) -> Any:
    def structure(value: Any, _: type) -> Any:
        for member in t:
            if value == member.value or (
                isinstance(value, str)
                and isinstance(member.value, str)
                and value.lower() == member.value.lower()
            ):
                return member
        allowed = ", ".join(str(m.value) for m in t)
        raise Invalid(f"must be one of {allowed}; got {_describe(value)}")

    return structure


def _is_sequence(t: Any) -> bool:
    return get_origin(t) in (tuple, list) and not (
        get_origin(t) is tuple and len(get_args(t)) == 2 and get_args(t)[1] is not Ellipsis
    )


def _is_mapping(t: Any) -> bool:
    return get_origin(t) is dict


def _is_optional(t: Any) -> bool:
    return get_origin(t) in (typing.Union, getattr(__import__("types"), "UnionType", ())) and (
        type(None) in get_args(t)
    )


def make_converter() -> cattrs.Converter:  # noqa: C901
    conv = cattrs.Converter(forbid_extra_keys=False)
    conv.register_structure_hook(int, _int)
    conv.register_structure_hook(float, _float)
    conv.register_structure_hook(str, _str)
    conv.register_structure_hook(bool, _bool)
    conv.register_structure_hook_factory(_is_literal, _literal_hook)
    conv.register_structure_hook_factory(_is_enum, _enum_hook)

    def sequence_hook(t: Any) -> Any:
        (item_type, *_) = get_args(t) or (Any,)
        make = tuple if get_origin(t) is tuple else list

        def structure(value: Any, _: type) -> Any:
            if not isinstance(value, (list, tuple)):
                raise Invalid(f"expected a list, got {_describe(value)}")
            problems: list[tuple[str, str]] = []
            out = []
            for i, item in enumerate(value):
                try:
                    out.append(conv.structure(item, item_type))
                except ConversionError as e:
                    problems += [(_join(f"[{i}]", p), m) for p, m in e.problems]
                except Exception as e:
                    problems += [(_join(f"[{i}]", p), m) for p, m in _problems(e)]
            if problems:
                raise ConversionError(problems)
            return make(out)

        return structure

    conv.register_structure_hook_factory(_is_sequence, sequence_hook)

    def mapping_hook(t: Any) -> Any:
        key_type, value_type = get_args(t) or (str, Any)

        def structure(value: Any, _: type) -> Any:
            if not isinstance(value, Mapping):
                raise Invalid(f"expected an object, got {_describe(value)}")
            problems: list[tuple[str, str]] = []
            out = {}
            for k, v in value.items():
                try:
                    out[conv.structure(k, key_type)] = conv.structure(v, value_type)
                except Exception as e:
                    problems += [(_join(str(k), p), m) for p, m in _problems(e)]
            if problems:
                raise ConversionError(problems)
            return out

        return structure

    conv.register_structure_hook_factory(_is_mapping, mapping_hook)

    def optional_hook(t: Any) -> Any:
        inner = [a for a in get_args(t) if a is not type(None)]
        target: Any = inner[0] if len(inner) == 1 else typing.Union[tuple(inner)]  # noqa: UP007

        def structure(value: Any, _: type) -> Any:
            return None if value is None else conv.structure(value, target)

        return structure

    conv.register_structure_hook_factory(_is_optional, optional_hook)

    def dataclass_hook(cls: type[Any]) -> Any:
        fields = dataclasses.fields(cls)
        hints = typing.get_type_hints(cls)
        # typed as Any: mypy cannot tell these overrides from the function's named options
        renames: dict[str, Any] = {f.name: override(rename=camel(f.name)) for f in fields}
        inner = make_dict_structure_fn(
            cls,
            conv,
            _cattrs_forbid_extra_keys=False,
            _cattrs_detailed_validation=True,
            **renames,
        )

        def structure(value: Any, _: type) -> Any:
            if value is None:
                value = {}
            if not isinstance(value, Mapping):
                raise Invalid(f"expected an object, got {_describe(value)}")
            value = _snake_to_camel_keys(value, cls)
            problems: list[tuple[str, str]] = []
            for f in fields:
                key = camel(f.name)
                if key not in value:
                    continue
                try:
                    conv.structure(value[key], hints[f.name])
                except Exception as e:
                    problems += [(_join(key, p), m) for p, m in _problems(e)]
            if problems:
                raise ConversionError(problems)
            try:
                return inner(value, cls)
            except Invalid:
                raise
            except Exception as e:
                raise ConversionError(_problems(e)) from None

        return structure

    conv.register_structure_hook_factory(dataclasses.is_dataclass, dataclass_hook)

    def dataclass_unstructure(cls: type) -> Any:
        fields = dataclasses.fields(cls)

        def unstructure(obj: Any) -> dict[str, Any]:
            return {camel(f.name): conv.unstructure(getattr(obj, f.name)) for f in fields}

        return unstructure

    conv.register_unstructure_hook_factory(dataclasses.is_dataclass, dataclass_unstructure)
    return conv


def _problems(exc: BaseException) -> list[tuple[str, str]]:
    """``(path, message)`` pairs of any exception raised while structuring."""
    if isinstance(exc, ConversionError):
        return list(exc.problems)
    if isinstance(exc, Invalid):
        return [("", str(exc))]
    if isinstance(exc, KeyError):
        return [(camel(str(exc.args[0])) if exc.args else "", "is required")]
    if isinstance(exc, cattrs.BaseValidationError):
        out: list[tuple[str, str]] = []
        for sub in exc.exceptions:
            name = ""
            for note in getattr(sub, "__notes__", []):
                n = getattr(note, "name", None)
                if isinstance(n, str):
                    name = camel(n)
            if isinstance(sub, KeyError) and name:
                out.append((name, "is required"))
                continue
            out += [(_join(name, p), m) for p, m in _problems(sub)]
        return out or [("", str(exc))]
    if isinstance(exc, TypeError) and "missing" in str(exc) and "required" in str(exc):
        # dataclass __init__: "missing 1 required positional argument: 'text'"
        missing = [camel(p.strip("' ")) for p in str(exc).split(":", 1)[-1].split(" and ")]
        return [(m, "is required") for m in missing if m]
    return [("", str(exc) or type(exc).__name__)]


CONVERTER = make_converter()


def structure(value: Any, cls: type[T]) -> T:
    """``value`` as a ``cls``; raises :class:`ConversionError` naming every bad key."""
    try:
        return CONVERTER.structure(value, cls)
    except ConversionError:
        raise
    except Exception as e:
        raise ConversionError(_problems(e)) from None


def unstructure(obj: Any) -> Any:
    """A dataclass as JSON-ready data with camelCase keys."""
    return CONVERTER.unstructure(obj)


def camel_keys(value: Any) -> Any:
    """A JSON-ready value with every dictionary key in camelCase, at any depth."""
    if isinstance(value, Mapping):
        return {camel(k) if isinstance(k, str) else k: camel_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [camel_keys(v) for v in value]
    return value


def to_wire(result: Any) -> Any:
    """An operation's result as the wire carries it: JSON-ready, keys in camelCase."""
    return camel_keys(result.to_dict() if hasattr(result, "to_dict") else result)
