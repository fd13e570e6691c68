"""URLs a config takes, and URLs genfair records.

A config URL (a model's ``base_url``, a news source's ``url``, ``tracking.uri``) is stored
verbatim in ``params.yaml``, ``dvc.lock``, ``run_params.json`` and MLflow params, so it must
carry no credential: :func:`url_problem` refuses user info (``user:password@``) and query
parameters whose name looks like a key or token (``?api_key=``, ``&token=``, ``sig=``...);
credentials come from the environment (``api_key_env``, ``MLFLOW_TRACKING_USERNAME`` /
``MLFLOW_TRACKING_PASSWORD``, ``PGPASSWORD``). A URL from the environment
(``MLFLOW_TRACKING_URI``) may hold them: :func:`strip_in_text` drops them wherever it is
recorded (``store.json``, the report, MLflow params, log lines: :func:`strip_in_text`).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

__all__ = ["SECRET_PARAM", "checked_url", "strip_in_text", "url_problem"]

#: a query parameter name that looks like it carries a credential
SECRET_PARAM = re.compile(
    r"key|token|secret|passw|pwd|auth|sig|credential|session|bearer", re.IGNORECASE
)
#: a URL with user info inside free text (a log line, an error message)
_USERINFO_IN_TEXT = re.compile(r"(?P<scheme>(?:[A-Za-z][A-Za-z0-9+.-]*:)?//)[^\s/@'\"<>]+@")
_QUERY_SECRET_IN_TEXT = re.compile(
    r"(?P<name>[?&][^=&\s#'\"<>]*(?:" + SECRET_PARAM.pattern + r")[^=&\s#'\"<>]*=)"
    r"[^&\s#'\"<>]*",
    re.IGNORECASE,
)
_FIX = (
    "give credentials through the environment (api_key_env; "
    "MLFLOW_TRACKING_USERNAME/PASSWORD; PGPASSWORD)"
)


#: what a host name or IP address may hold (urlsplit lower-cases it and drops IPv6 brackets)
_HOST = re.compile(r"[a-z0-9_.:-]+")


def url_problem(
    value: object, schemes: frozenset[str] | None = frozenset({"http", "https"})
) -> str | None:
    """Why ``value`` is not an acceptable config URL (one line, without any credential it
    holds), or ``None``. ``schemes`` None accepts any scheme (``tracking.uri``: sqlite,
    postgresql...), but http(s) URLs are always checked for a host and a valid port."""
    if not isinstance(value, str) or not value.strip():
        return "empty: give a URL such as https://host:port/v1"
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        return "holds whitespace or control characters"
    try:
        parts = urlsplit(value)
    except ValueError:
        return "not a valid URL (unbalanced [ ] around the host)"
    try:
        port = parts.port
    except ValueError:  # its message would quote the text, which may be a password
        return "not a valid URL: the port is not a number in 1-65535"
    scheme = parts.scheme.lower()
    if schemes is not None and scheme not in schemes:
        allowed = " or ".join(f"{s}://" for s in sorted(schemes))
        return f"scheme {scheme or 'missing'}: use {allowed}host[:port]/path"
    if scheme in {"http", "https"}:
        if not parts.hostname:
            return "has no host: use http(s)://host[:port]/path"
        if not _HOST.fullmatch(parts.hostname):  # e.g. http://key=... : a pasted secret, not a host
            return "the host is not a host name or IP address: use http(s)://host[:port]/path"
        if port == 0:
            return "port 0 is not a port: use 1-65535"
    if parts.username is not None or parts.password is not None:
        return (
            "holds user info (user:password@), which would be "
            f"stored in params.yaml, dvc.lock and MLflow: {_FIX}"
        )
    secret = [
        name
        for name, _ in parse_qsl(parts.query, keep_blank_values=True)
        if SECRET_PARAM.search(name)
    ]
    if secret:
        return (
            f"query parameter {secret[0]!r} looks like a credential, which "
            f"would be stored in params.yaml, dvc.lock and MLflow: {_FIX}"
        )
    return None


def checked_url(
    value: str,
    schemes: frozenset[str] | None = frozenset({"http", "https"}),
    *,
    base: bool = False,
) -> str:
    """A pydantic field validator's body: ``value``, or a validation error (its key named
    by :func:`genfair.frame.format_errors`) saying what is wrong, never echoing a
    credential. ``base``: a URL paths are appended to (a model's ``base_url``), which can
    hold no ``?query`` or ``#fragment`` (``/chat/completions`` would land inside them)."""
    problem = url_problem(value, schemes)
    if problem is None and base and ("?" in value or "#" in value):
        problem = (
            "a base URL takes no ?query or #fragment (genfair appends paths such as "
            "/chat/completions to it): remove everything from the ? or #"
        )
    if problem:
        from pydantic_core import PydanticCustomError  # here: genfair.logs imports this module

        raise PydanticCustomError("url", "not a usable URL: {problem}", {"problem": problem})
    return value


def strip_in_text(text: str) -> str:
    """``text`` (a URL, a log line, an error) with the user info of every URL in it dropped
    and credential-looking query values masked (``scheme://host``, ``?token=[redacted]``);
    the rest kept byte for byte (a ``sqlite:///`` URL of an absolute path stays as it is)."""
    text = _USERINFO_IN_TEXT.sub(r"\g<scheme>", text)
    return _QUERY_SECRET_IN_TEXT.sub(r"\g<name>[redacted]", text)
