"""The per-kind channel setup form, made from each kind module's constants so a new
kind needs no code here: ``CONFIG_SCHEMA`` (JSON Schema; each property's
``description`` is its label, ``readOnly`` ones are not asked for, ``format:
"password"`` is a password input that keeps the stored secret when left empty,
an ``enum`` is a select, an array a comma-separated list, ``required`` marked),
``HELP`` (where to get the URL or key in that service) and the module
docstring's first paragraph (the kind's one line on the chooser).

Pure functions of the module and the submitted form, tested directly.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """One config field of the form: ``name`` (the config key and the input's
    name), ``label``, ``widget`` (``text`` | ``url`` | ``email`` | ``password`` |
    ``select``), ``choices`` (a select's), ``required``, ``many`` (a list typed
    comma-separated)."""

    name: str
    label: str
    widget: str
    choices: tuple[str, ...] = ()
    required: bool = False
    many: bool = False


def _variants(spec: dict) -> list[dict]:
    return [spec, *spec.get("oneOf", []), *spec.get("anyOf", [])]


def fields(module) -> list[Field]:
    """The fields ``module`` (a kind of ``alerts.integrations.KINDS``) asks for, in
    its ``CONFIG_SCHEMA``'s order: the required ones first."""
    schema = module.CONFIG_SCHEMA
    required = set(schema.get("required", ()))
    made = []
    for name, spec in schema["properties"].items():
        if spec.get("readOnly"):
            continue
        variants = _variants(spec)
        many = any(v.get("type") == "array" for v in variants)
        formats = {v.get("format") for v in variants} | {
            v.get("items", {}).get("format") for v in variants}
        if "enum" in spec:
            widget = "select"
        elif "password" in formats:
            widget = "password"
        elif "email" in formats and not many:
            widget = "email"
        elif "uri" in formats:
            widget = "url"
        else:
            widget = "text"
        made.append(Field(name=name, label=spec.get("description") or name, widget=widget,
                          choices=tuple(spec.get("enum", ())), required=name in required,
                          many=many))
    return sorted(made, key=lambda f: not f.required)


def summary(module) -> str:
    """The kind's one line: its module docstring's first paragraph on one line, its
    reStructuredText literals (````x````) as plain text."""
    doc = (module.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.replace("``", "").split())


def config_from(form, asked: list[Field], previous: dict | None = None) -> dict:
    """The config a submitted ``form`` (a QueryDict or dict of strings) gives for
    the fields ``asked``: values stripped, empty ones left out (the kind's
    default), a list field split on commas; a password field left empty keeps
    ``previous``'s value (the stored config of the channel being edited)."""
    config = {}
    for f in asked:
        value = (form.get(f.name) or "").strip()
        if not value:
            if f.widget == "password" and (previous or {}).get(f.name):
                config[f.name] = previous[f.name]
            continue
        config[f.name] = [v.strip() for v in value.split(",") if v.strip()] if f.many \
            else value
    return config


def values_of(config: dict, asked: list[Field]) -> dict[str, str]:
    """What the form shows for a stored ``config``: lists joined with ", ",
    secrets (password fields) never."""
    shown = {}
    for f in asked:
        value = config.get(f.name)
        if value is None or f.widget == "password":
            continue
        shown[f.name] = ", ".join(value) if isinstance(value, list) else str(value)
    return shown
