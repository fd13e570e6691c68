"""Keep API keys out of everything genfair writes.

A model config names the environment variable that holds its key (``api_key_env``); the
key itself must never reach the response cache, a responses table, an error message or a
log line, even when an endpoint or the model echoes it back. Every backend that reads a
key registers the variable here (:func:`register_key_env`); from then on:

- :func:`redact` replaces each registered value in a text with ``[redacted]``;
- the runner passes every completion through :func:`redact_completion` before caching it;
- every log record created in this process is redacted (a log-record factory, so records
  of every library, e.g. httpx, are covered, whatever handler writes them).

Values shorter than :data:`MIN_SECRET_CHARS` are not redacted (replacing a 3-letter value
everywhere would corrupt ordinary answers); a warning says so, without the value.

:func:`key_env_problem` tells a variable *name* from a pasted key, so that a config whose
``api_key_env`` holds the key itself is rejected before the value is printed anywhere.
:func:`key_env_refusal` keeps a config (a colleague's branch, a downloaded study) from
choosing which secret of the machine is sent to its ``base_url``: only variables of the key
form (``*_API_KEY``), or those the user lists in ``GENFAIR_ALLOWED_KEY_ENVS``, may be named.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from genfair.models.base import Completion

log = logging.getLogger(__name__)

MASK = "[redacted]"
MIN_SECRET_CHARS = 8

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: prefixes of well-known key formats (OpenAI, Anthropic, Hugging Face, GitHub, GitLab,
#: Slack, AWS, Google, Groq, Replicate, NVIDIA, Perplexity)
_KEY_PREFIXES = (
    "sk-",
    "sk_",
    "hf_",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xox",
    "AKIA",
    "ASIA",
    "AIza",
    "gsk_",
    "r8_",
    "nvapi-",
    "pplx-",
    "Bearer",
)

#: the documented form of a key variable, which a config may name unless the user lists names
KEY_ENV_FORM = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")
#: the environment variable in which the user lists the only names a config may use instead
ALLOWED_KEY_ENVS = "GENFAIR_ALLOWED_KEY_ENVS"

_lock = threading.Lock()
_key_envs: set[str] = set()
_installed = False


def key_env_problem(name: str) -> str | None:
    """Why ``name`` looks like an API key rather than an environment variable name, or
    ``None``. The answer never contains ``name`` itself."""
    if any(name.startswith(prefix) for prefix in _KEY_PREFIXES):
        return "it starts like an API key"
    if not _ENV_NAME.fullmatch(name):
        return "it holds characters an environment variable name cannot have"
    if len(name) >= 20 and "_" not in name and re.search("[0-9]", name):
        return "it looks like a random token (long, with digits and no underscore)"
    if len(name) > 100:
        return "it is too long for a variable name"
    return None


def key_env_refusal(name: str) -> str | None:
    """Why ``name`` may not be sent as a key, or ``None``: with ``GENFAIR_ALLOWED_KEY_ENVS``
    set (comma-separated names), only the names it lists may be; otherwise only names of the
    key form (:data:`KEY_ENV_FORM`: ``OPENAI_API_KEY``, ``GROQ_API_KEY``), never another
    secret such as ``PGPASSWORD`` or ``MLFLOW_TRACKING_PASSWORD``. The answer never contains
    ``name`` (it may be a pasted key)."""
    allowed = os.environ.get(ALLOWED_KEY_ENVS)
    if allowed is not None:
        if name in {part.strip() for part in allowed.split(",")} - {""}:
            return None
        return (
            f"this variable is not listed in {ALLOWED_KEY_ENVS}, the only names this machine "
            "lets a config send as a key (value not shown): add it there, or name a listed one"
        )
    if KEY_ENV_FORM.fullmatch(name):
        return None
    return (
        "only a variable named like OPENAI_API_KEY (upper case, ending in _API_KEY) may be "
        "sent as a key, so that a config cannot send another secret (PGPASSWORD) to its "
        "base_url (value not shown): rename the variable, or allow it with "
        f"export {ALLOWED_KEY_ENVS}=<its name>"
    )


def register_key_env(name: str) -> None:
    """Redact the value of environment variable ``name`` from now on (read at each
    :func:`redact`, so a value set later is covered too)."""
    global _installed
    with _lock:
        _key_envs.add(name)
        if not _installed:
            _install_log_redaction()
            _installed = True
    value = os.environ.get(name) or ""
    if 0 < len(value) < MIN_SECRET_CHARS:
        log.warning(
            "the value of %s is shorter than %d characters: too short to redact safely "
            "from answers; is it a real key?",
            name,
            MIN_SECRET_CHARS,
        )


def secrets() -> list[str]:
    """The current values of the registered variables long enough to redact."""
    values = {os.environ.get(name) or "" for name in _key_envs}
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every registered key value replaced by :data:`MASK`."""
    values = secrets()
    if not values or not isinstance(text, str):
        return text
    for value in values:  # longest first, so a key containing another is masked whole
        text = text.replace(value, MASK)
    return text


def redact_completion(completion: Completion) -> Completion:
    """``completion`` with keys masked in its text and error (the same object when clean)."""
    changes = {}
    for name in ("text", "error"):
        value = getattr(completion, name)
        if isinstance(value, str):
            clean = redact(value)
            if clean != value:
                changes[name] = clean
    if not changes:
        return completion
    log.warning("a key value was found in a %s answer and redacted", completion.status)
    return dataclasses.replace(completion, **changes)


def _install_log_redaction() -> None:
    """Wrap the log-record factory: a record whose message or traceback holds a key is
    rewritten, so no handler ever sees the key."""
    previous = logging.getLogRecordFactory()

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if not secrets():
            return record
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is the handler's problem, not ours
            return record
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[0] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text)
        return record

    logging.setLogRecordFactory(factory)
