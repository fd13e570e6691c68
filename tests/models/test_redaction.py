"""Keys never written: api_key_env must name a variable; key values are masked everywhere."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from genfair.models.base import Completion
from genfair.models.config import ModelConfig, OpenAIModelConfig, OpenAIT2IConfig, OpenAIVLMConfig
from genfair.models.redaction import (
    ALLOWED_KEY_ENVS,
    MASK,
    key_env_problem,
    redact,
    redact_completion,
    register_key_env,
)
from genfair.study_params import format_errors

PASTED = [
    "sk-proj-4fGh7Jk2LmNoPqRsTuVwXyZ0123456789abcdef",
    "sk-ant-api03-abcdefghijklmnop",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "AKIAIOSFODNN7EXAMPLE",
    "4f9c2a7e1b3d5f6a8c0e2b4d6f8a0c2e",  # a bare hex token
    "Bearer abc.def",
    "my key",
]


@pytest.mark.parametrize("value", PASTED)
@pytest.mark.parametrize("config", [OpenAIModelConfig, OpenAIT2IConfig, OpenAIVLMConfig])
def test_a_key_pasted_into_api_key_env_is_rejected_without_printing_it(value, config):
    with pytest.raises(ValidationError) as caught:
        config(backend="openai", model_id="m", api_key_env=value)
    text = str(caught.value)
    assert "api_key_env" in text and "NAME of the environment variable" in text
    assert value not in text


def test_the_study_config_error_names_the_key_without_the_value():
    value = PASTED[0]
    data = {"backend": "openai", "model_id": "m", "api_key_env": value}
    with pytest.raises(ValidationError) as caught:
        TypeAdapter(ModelConfig).validate_python(data)
    message = format_errors(caught.value, "params.yaml", ("models", "gpt"), data=data)
    assert "params.yaml: models.gpt.api_key_env: Value error, this must be the NAME" in message
    assert value not in message


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "GROQ_API_KEY",
        "my_local_key",
        "AZURE_OPENAI_KEY_2",
        "VERY_LONG_NAME_OF_AN_OPENAI_COMPATIBLE_ENDPOINT_API_KEY",
    ],
)
def test_variable_names_are_accepted(name, monkeypatch):
    assert key_env_problem(name) is None
    if not name.endswith("_API_KEY"):  # another form: the user allows it by name
        monkeypatch.setenv(ALLOWED_KEY_ENVS, f"OTHER, {name}")
    assert OpenAIModelConfig(backend="openai", model_id="m", api_key_env=name).api_key_env == name


@pytest.mark.parametrize(
    "name", ["PGPASSWORD", "MLFLOW_TRACKING_PASSWORD", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"]
)
def test_a_config_cannot_name_another_secret_as_its_key(name, monkeypatch):
    """Before: ``api_key_env: PGPASSWORD`` sent the PostgreSQL password to the config's
    ``base_url`` as ``Bearer ...``."""
    monkeypatch.delenv(ALLOWED_KEY_ENVS, raising=False)
    data = {"backend": "openai", "model_id": "m", "api_key_env": name}
    with pytest.raises(ValidationError) as caught:
        TypeAdapter(ModelConfig).validate_python(data)
    [problem] = format_errors(caught.value, "params.yaml", ("models", "gpt"), data=data).split(
        "\n"
    )[1:]  # under "invalid configuration:", one line a problem
    assert (
        problem.strip().startswith(
            "params.yaml: models.gpt.api_key_env: Value error, only a variable named like "
            "OPENAI_API_KEY"
        )
        and f"export {ALLOWED_KEY_ENVS}=" in problem
    )


def test_the_users_allow_list_is_the_only_one_when_set(monkeypatch):
    monkeypatch.setenv(ALLOWED_KEY_ENVS, "LAB_ENDPOINT_SECRET")
    OpenAIModelConfig(backend="openai", model_id="m", api_key_env="LAB_ENDPOINT_SECRET")
    with pytest.raises(ValidationError, match=f"not listed in {ALLOWED_KEY_ENVS}"):
        OpenAIModelConfig(backend="openai", model_id="m", api_key_env="OPENAI_API_KEY")


def test_redact_masks_every_registered_value_longest_first(monkeypatch):
    monkeypatch.setenv("GENFAIR_TEST_KEY_A", "abcdefgh12345678")
    monkeypatch.setenv("GENFAIR_TEST_KEY_B", "abcdefgh1234567890XYZ")  # contains A's value
    register_key_env("GENFAIR_TEST_KEY_A")
    register_key_env("GENFAIR_TEST_KEY_B")
    assert redact("a abcdefgh12345678 b abcdefgh1234567890XYZ") == f"a {MASK} b {MASK}"
    completion = Completion(status="error", error="HTTP 401: bad key abcdefgh12345678")
    assert redact_completion(completion).error == f"HTTP 401: bad key {MASK}"
    clean = Completion(status="ok", text="nothing to hide")
    assert redact_completion(clean) is clean


def test_short_values_are_not_redacted_and_say_so(monkeypatch, caplog):
    monkeypatch.setenv("GENFAIR_TEST_KEY_SHORT", "abc")
    with caplog.at_level(logging.WARNING):
        register_key_env("GENFAIR_TEST_KEY_SHORT")
    assert redact("abc abc") == "abc abc"  # would corrupt every answer
    assert (
        "GENFAIR_TEST_KEY_SHORT is shorter than 8" in caplog.text and "abc abc" not in caplog.text
    )


def test_log_records_of_any_logger_are_redacted(monkeypatch, caplog):
    secret = "sk-log-test-0123456789"
    monkeypatch.setenv("GENFAIR_TEST_KEY_LOG", secret)
    register_key_env("GENFAIR_TEST_KEY_LOG")
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="httpx")  # the stage logging quiets httpx to WARNING
    logging.getLogger("httpx").debug("sent header Authorization: Bearer %s", secret)
    try:
        raise RuntimeError(f"server said {secret}")
    except RuntimeError:
        logging.getLogger("somewhere.else").exception("failed with %s", "it")
    assert secret not in caplog.text
    assert f"Bearer {MASK}" in caplog.text and f"server said {MASK}" in caplog.text


@settings(max_examples=300, deadline=None)
@given(
    name=st.one_of(
        st.text(max_size=40),
        st.from_regex(r"[A-Z][A-Z0-9_]{0,20}(_API_KEY|_KEY|_TOKEN|PASSWORD)", fullmatch=True),
    ),
    allowed=st.one_of(st.none(), st.lists(st.from_regex(r"[A-Z_]{1,12}", fullmatch=True))),
)
def test_any_name_is_sent_only_by_the_form_or_the_users_list(
    name: str, allowed: list[str] | None
) -> None:
    """A config's ``api_key_env`` is accepted exactly when it has the key form (no list set)
    or the user's list holds it; a refusal never quotes the name."""
    import os

    from genfair.models.redaction import KEY_ENV_FORM, key_env_refusal

    saved = os.environ.pop(ALLOWED_KEY_ENVS, None)
    try:
        if allowed is not None:
            os.environ[ALLOWED_KEY_ENVS] = ",".join(allowed)
        refusal = key_env_refusal(name)
        # a name that is never accepted (lower case, a space): the refusal any name gets
        reference = key_env_refusal("not a key")
    finally:
        os.environ.pop(ALLOWED_KEY_ENVS, None)
        if saved is not None:
            os.environ[ALLOWED_KEY_ENVS] = saved
    accepted = name in allowed if allowed is not None else bool(KEY_ENV_FORM.fullmatch(name))
    assert (refusal is None) == accepted
    if refusal is not None:  # the same words whatever the name: it is never quoted
        assert refusal == reference
