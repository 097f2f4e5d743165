"""config.example.yaml holds every key (the README says so): each key of the config models, the core's
(``synctool.config``) and every built-in platform's section, is in it, and it has no key that no model reads."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel

from synctool import platforms
from synctool.config import Config

EXAMPLE = Path(__file__).resolve().parents[1] / "config.example.yaml"


def model_keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every key a model reads, dotted (``crm.profile_defaults.is_org``), its sub-models walked."""
    keys = set()
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        keys.add(key)
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            keys |= model_keys(field.annotation, key + ".")
    return keys


def example_keys(data: dict, prefix: str = "") -> set[str]:
    keys = set()
    for name, value in data.items():
        keys.add(prefix + name)
        if isinstance(value, dict):
            keys |= example_keys(value, f"{prefix}{name}.")
    return keys


def the_models_keys() -> set[str]:
    keys = model_keys(Config)
    for platform in platforms.registered():
        if platform.config is not None and platform.config.__module__.startswith("synctool."):  # built-ins
            keys |= {platform.role} | model_keys(platform.config, platform.role + ".")
    return keys


def test_every_key_of_the_config_models_is_in_config_example_yaml_and_no_other():
    example = example_keys(yaml.safe_load(EXAMPLE.read_text()))
    models = the_models_keys()
    assert sorted(models - example) == [], "keys missing from config.example.yaml"
    assert sorted(example - models) == [], "keys in config.example.yaml that no config model reads"


def test_the_walk_finds_nested_keys_and_platform_sections():
    models = the_models_keys()
    assert {"crm.profile_defaults.is_org", "organisation.chat_webhook_hosts", "pos.notification_url"} <= models
    assert "donations.base_url" in models and "receiver.port" in models


def test_config_example_yaml_is_a_config_synctool_reads():
    data = yaml.safe_load(EXAMPLE.read_text())
    Config.model_validate({k: v for k, v in data.items() if k in Config.model_fields})
