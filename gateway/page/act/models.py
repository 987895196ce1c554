"""The steps of a ``browse_act`` batch, as the agent sends them, and what each step reports.

Kept apart from running them: the models are the tool's input schema (their
fields and constraints are what the agent reads), the runner is
``gateway.page.act.actions``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, Field, model_validator

from gateway.output.absent import absent

__all__ = ["Action", "Check", "Click", "Drag", "Hover", "Press", "Ref", "Scroll", "Select",
           "StepResult", "Type", "Upload", "WaitFor"]

Ref = Annotated[int, Field(ge=1)]
"""A ref (``#N``) from the tab's current view; ``browse_act`` says so once."""


def _exactly_one(action: BaseModel, fields: tuple[str, ...], rule: str) -> None:
    """The rule an action states when not exactly one of ``fields`` is given: checked
    when the batch is read, so a bad step refuses the whole batch before its first step
    runs (pydantic says which step)."""
    if sum(getattr(action, name) is not None for name in fields) != 1:
        raise ValueError(rule)


class Click(BaseModel):
    do: Literal["click"]
    ref: Ref
    button: Literal["left", "right", "middle"] = "left"
    count: Annotated[int, Field(ge=1, le=3)] = 1


class Type(BaseModel):
    do: Literal["type"]
    ref: Ref
    text: Annotated[str, Field(max_length=1_000_000)]
    clear: bool = False
    submit: bool = False


class Press(BaseModel):
    do: Literal["press"]
    key: Annotated[str, Field(max_length=64)]  # Enter, Control+A: a bad one's error says so


class Select(BaseModel):
    do: Literal["select"]
    ref: Ref
    value: str | None = None
    label: str | None = None

    @model_validator(mode="after")
    def _one_choice(self) -> Self:
        _exactly_one(self, ("value", "label"), "select needs exactly one of value or label")
        return self


class Check(BaseModel):
    do: Literal["check", "uncheck"]
    ref: Ref


class Hover(BaseModel):
    do: Literal["hover"]
    ref: Ref


class Scroll(BaseModel):
    do: Literal["scroll"]
    ref: Ref | None = None
    to: Literal["top", "bottom"] | None = None
    by: Annotated[int | None, Field(ge=-100_000, le=100_000)] = None  # pixels, as scrollBy

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        _exactly_one(self, ("ref", "to", "by"), "scroll needs exactly one of ref, to or by")
        return self


class WaitFor(BaseModel):
    do: Literal["wait_for"]
    text: str | None = None
    text_gone: str | None = None
    ref_gone: Ref | None = None
    url: str | None = None
    timeout: Annotated[float, Field(gt=0, le=120)] = 10.0

    @model_validator(mode="after")
    def _one_condition(self) -> Self:
        _exactly_one(self, ("text", "text_gone", "ref_gone", "url"),
                     "wait_for needs exactly one of text, text_gone, ref_gone or url")
        return self


class Upload(BaseModel):
    do: Literal["upload"]
    ref: Ref
    paths: Annotated[list[str], Field(description="Files on the gateway's machine.",
                                      min_length=1, max_length=20)]


class Drag(BaseModel):
    do: Literal["drag"]
    ref: Ref
    to: Ref | None = None
    by: Annotated[list[int] | None, Field(description="[dx, dy] px",
                                          min_length=2, max_length=2)] = None

    @model_validator(mode="after")
    def _one_end(self) -> Self:
        _exactly_one(self, ("to", "by"), "drag needs exactly one of to (a ref) or by ([dx, dy])")
        return self


Action = Annotated[Click | Type | Press | Select | Check | Hover | Scroll | WaitFor | Upload
                   | Drag,
                   Field(discriminator="do")]


class StepResult(BaseModel):
    do: str
    ok: bool
    error: str | None = absent()
