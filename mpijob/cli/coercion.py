"""Typer's value coercion for the plain option types of this CLI, without pydantic.

typer (0.29) converts every option's value through a pydantic `TypeAdapter`: importing pydantic and
building the adapters costs ~0.12 s on every `mpijob` call that takes options — twice what all of
`kubectl get` takes. The CLI's options are only `str`, `int`, `float`, `bool` and lists of those, so
`install()` gives typer a plain converter for exactly those (the messages as typer words them) and
leaves every other annotation to typer's own. The hook is typer's `typer.core.build_runtime_param`;
when a typer release no longer has it, `install()` does nothing and typer's own coercion runs.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any

PLAIN = (str, int, float, bool)
_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off", ""}
_WORDS = {int: "integer", float: "number"}


def _plain(annotation: Any) -> tuple[type, bool] | None:
    """(leaf type, is a list) when `annotation` is a plain type, `Optional` of one, or a list of one."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation in PLAIN:
        return annotation, False
    if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        return _plain(next(a for a in args if a is not type(None)))
    if origin is list and len(args) == 1 and args[0] in PLAIN:
        return args[0], True
    return None


def install() -> None:
    """Use the plain converter for plain annotations from now on (idempotent)."""
    try:
        import typer.core as typer_core
        from typer._click.exceptions import BadParameter
        from typer._coercion import RuntimeParam
    except ImportError:
        return
    pydantic_build = getattr(typer_core, "build_runtime_param", None)
    if pydantic_build is None or getattr(pydantic_build, "plain", False):
        return

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        leaf: type = str
        many: bool = False

        def _one(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if self.leaf is str or (isinstance(value, self.leaf)
                                    and not (self.leaf is not bool and isinstance(value, bool))):
                return value if self.leaf is not str else str(value)
            text = str(value).strip()
            if self.leaf is bool:
                if text.lower() in _TRUE | _FALSE:
                    return text.lower() in _TRUE
                raise BadParameter(f"{value!r} is not a valid boolean", ctx=ctx, param=param)
            try:
                return self.leaf(text)
            except ValueError:
                raise BadParameter(f"{value!r} is not a valid {_WORDS[self.leaf]}", ctx=ctx, param=param) from None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.many:
                return [self._one(v, param, ctx) for v in (value if isinstance(value, (list, tuple)) else [value])]
            return self._one(value, param, ctx)

    def build_runtime_param(descriptor: Any) -> Any:
        info = descriptor.parameter_info
        plain = _plain(descriptor.annotation)
        constrained = any(getattr(info, k, None) is not None for k in ("parser", "click_type", "min", "max"))
        if plain is None or constrained or descriptor.file_annotation is not None:
            return pydantic_build(descriptor)
        return PlainRuntimeParam(parameter_info=info, annotation=descriptor.annotation, leaf=plain[0], many=plain[1])

    build_runtime_param.plain = True  # type: ignore[attr-defined]  # the marker install() checks
    typer_core.build_runtime_param = build_runtime_param
