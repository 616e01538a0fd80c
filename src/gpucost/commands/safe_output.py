"""What leaves the warehouse: CSV cells that cannot run as formulas, pseudonymised user ids, and
one-line errors instead of tracebacks.

- :func:`csv_cell` / :func:`csv_cell_sql`: a text cell from data that begins with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return (OWASP's CSV-injection list) is written with a leading
  ``'``, so a spreadsheet shows it as text instead of running it. A cell that is a plain number
  (``-12.50``, ``+3``, ``1e-3``) is left alone: negative money stays a number. Both functions
  follow the same two patterns below (the SQL one for DuckDB's ``COPY ... (format csv)``).
- :class:`Pseudonymiser`: user ids replaced by ``u_`` + HMAC-SHA256(secret, id) (hex, 24 chars),
  the secret read from ``GPUCOST_PSEUDONYMISE_SECRET``, switched on by the dbt var
  ``gpucost_pseudonymise_users`` (dbt_project.yml) or ``GPUCOST_PSEUDONYMISE_USERS``. One keyed
  hash for every output, so a user has the same pseudonym in the Parquet marts, the FOCUS export
  and any statement, and nobody without the secret can recompute it from a guessed name.
- :func:`one_line_error`: the message ``gpucost`` prints for an exception it knows (a locked
  warehouse, a path that cannot be written, a folder that is a file, a missing file), or None.
- :func:`first_line`: any other error in one line, without quoted input, paths or quoted text
  hidden on request (the one definition the CLI, alerts, validation and landing probes use).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# -------------------------------------------------------------------------------------------------
# CSV injection

FORMULA_TRIGGERS = "=+-@\t\r"
"""First characters that make a spreadsheet read a cell as a formula (OWASP CSV injection)."""
PLAIN_NUMBER = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
"""A cell that is only a number: left as it is, whatever its sign."""
_TRIGGER = re.compile("^[" + re.escape(FORMULA_TRIGGERS) + "]")
_NUMBER = re.compile(PLAIN_NUMBER)


def csv_cell(value: Any) -> Any:
    """A cell value safe to write to CSV: text that a spreadsheet would run as a formula gets a
    leading ``'``; numbers, plain numeric text, None and other text are returned unchanged."""
    if not isinstance(value, str) or not _TRIGGER.match(value) or _NUMBER.fullmatch(value):
        return value
    return "'" + value


def csv_row(values: Iterable[Any]) -> list[Any]:
    """:func:`csv_cell` over a row."""
    return [csv_cell(value) for value in values]


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def csv_cell_sql(expression: str) -> str:
    """DuckDB SQL of :func:`csv_cell` for a VARCHAR expression (same triggers, same numbers)."""
    triggers = "^[" + "".join(
        {"\t": "\\t", "\r": "\\r"}.get(char, re.escape(char)) for char in FORMULA_TRIGGERS
    )
    triggers += "]"
    return (
        f"case when regexp_matches({expression}, {_sql_string(triggers)}) "
        f"and not regexp_full_match({expression}, {_sql_string(PLAIN_NUMBER)}) "
        f"then '''' || {expression} else {expression} end"
    )


# -------------------------------------------------------------------------------------------------
# Pseudonymised users

PSEUDONYMISE_VAR = "gpucost_pseudonymise_users"
PSEUDONYMISE_ENV = "GPUCOST_PSEUDONYMISE_USERS"
SECRET_ENV = "GPUCOST_PSEUDONYMISE_SECRET"
PSEUDONYM_PREFIX = "u_"
PSEUDONYM_HEX = 24
USER_COLUMNS = frozenset({"user_id", "x_userid"})
"""Columns (any case) that hold a user id in the marts and the FOCUS export."""
SIGNAL_COLUMNS = frozenset({"attribution_signals"})
"""Text columns that name a user as ``user=<id>`` tokens."""
TAG_COLUMNS = frozenset({"allocatedtags", "tags"})
"""JSON columns of tags whose user key holds a user id (the FOCUS export's AllocatedTags, and its
Tags: the origin bill line's tags, which may name the user)."""
MIN_SECRET_BYTES = 16


class PseudonymiseError(RuntimeError):
    """Pseudonymisation is on but cannot be done (no secret, or one too short)."""


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def project_var(project_dir: Path | None, name: str, default: Any = None) -> Any:
    """A var of ``dbt_project.yml`` (its ``vars:`` block) as YAML wrote it, else ``default``."""
    if project_dir is None:
        return default
    path = Path(project_dir) / "dbt_project.yml"
    if not path.is_file():
        return default
    import yaml

    loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return (loaded.get("vars") or {}).get(name, default)


def default_project_dir() -> Path | None:
    """The dbt project folder as ``gpucost`` finds it, or None outside a project."""
    from gpucost.commands.project import find_project_dir

    try:
        return find_project_dir()
    except SystemExit:
        return None


class Pseudonymiser:
    """Replaces user ids by a keyed hash; ``enabled`` False leaves them as they are."""

    def __init__(self, secret: bytes | None):
        self.secret = secret

    @property
    def enabled(self) -> bool:
        return self.secret is not None

    @classmethod
    def from_settings(
        cls, project_dir: Path | None = None, environ: dict[str, str] | None = None
    ) -> Pseudonymiser:
        """On when ``GPUCOST_PSEUDONYMISE_USERS`` says so, else when the dbt var
        ``gpucost_pseudonymise_users`` is true; then the secret must be set (PseudonymiseError)."""
        environ = os.environ if environ is None else environ
        project_dir = default_project_dir() if project_dir is None else project_dir
        setting = environ.get(PSEUDONYMISE_ENV)
        if setting is None or not setting.strip():
            setting = project_var(project_dir, PSEUDONYMISE_VAR, False)
        if not _truthy(setting):
            return cls(None)
        secret = environ.get(SECRET_ENV, "")
        if not secret:
            raise PseudonymiseError(
                f"user pseudonymisation is on ({PSEUDONYMISE_VAR}) but {SECRET_ENV} is not set: "
                f"export {SECRET_ENV}=<a secret of at least {MIN_SECRET_BYTES} characters, kept "
                "outside the project>"
            )
        if len(secret.encode()) < MIN_SECRET_BYTES:
            raise PseudonymiseError(
                f"{SECRET_ENV} is shorter than {MIN_SECRET_BYTES} characters; use a longer secret"
            )
        return cls(secret.encode())

    def __call__(self, user_id: Any) -> Any:
        """The user's pseudonym (``u_`` + 24 hex of HMAC-SHA256); None and '' stay as they are."""
        if self.secret is None or user_id is None or user_id == "":
            return user_id
        digest = hmac.new(self.secret, str(user_id).encode(), hashlib.sha256).hexdigest()
        return PSEUDONYM_PREFIX + digest[:PSEUDONYM_HEX]

    def signals(self, text: Any) -> Any:
        """Attribution signals text (``user=alice (+1.20), ns=...``) with each ``user=<id>``
        token's id pseudonymised."""
        if self.secret is None or not isinstance(text, str):
            return text
        return _USER_TOKEN.sub(
            lambda match: match[0] if match[2].startswith("__") else match[1] + self(match[2]),
            text,
        )

    def tags(self, text: Any, user_keys: Iterable[str]) -> Any:
        """A JSON object text of owner tags with the values of ``user_keys`` pseudonymised."""
        if self.secret is None or not isinstance(text, str):
            return text
        try:
            tags = json.loads(text)
        except ValueError:
            return text
        if not isinstance(tags, dict):
            return text
        for key in user_keys:
            if isinstance(tags.get(key), str):
                tags[key] = self(tags[key])
        return json.dumps(tags, separators=(",", ":"), ensure_ascii=False)

    def register(self, con: Any, user_keys: Iterable[str] = ()) -> None:
        """Register ``gpucost_pseudonym(v)``, ``gpucost_pseudonym_signals(v)`` and
        ``gpucost_pseudonym_tags(v)`` as DuckDB scalar functions on ``con``."""
        try:
            from duckdb.sqltypes import VARCHAR
        except ImportError:  # duckdb before 1.4
            from duckdb.typing import VARCHAR

        keys = tuple(user_keys)
        functions: dict[str, Callable[[Any], Any]] = {
            "gpucost_pseudonym": functools.lru_cache(maxsize=65536)(self.__call__),
            "gpucost_pseudonym_signals": self.signals,
            "gpucost_pseudonym_tags": lambda text: self.tags(text, keys),
        }
        for name, function in functions.items():
            con.create_function(
                name, function, [VARCHAR], VARCHAR, null_handling="special", side_effects=False
            )

    def column_sql(self, column: str, quoted: str) -> str:
        """The SQL that publishes ``column`` (already quoted as ``quoted``): pseudonymised when it
        holds user ids (registered functions), else the column itself."""
        if self.secret is None:
            return quoted
        name = column.lower()
        if name in USER_COLUMNS:
            return f"gpucost_pseudonym({quoted})"
        if name in SIGNAL_COLUMNS:
            return f"gpucost_pseudonym_signals({quoted})"
        if name in TAG_COLUMNS:
            return f"gpucost_pseudonym_tags({quoted})"
        return quoted


_USER_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(user=)([^\s,;()]+)")


def owner_user_tag_keys(project_dir: Path | None) -> list[str]:
    """The tag keys that carry a user id (dbt vars gpucost_tag_key_user and gpucost_tag_keys_user,
    each with every prefix of gpucost_tag_key_prefixes), as dbt_project.yml sets them."""
    primary = project_var(project_dir, "gpucost_tag_key_user", "user_id")
    keys = [primary, *(project_var(project_dir, "gpucost_tag_keys_user", None) or [])]
    prefixes = project_var(project_dir, "gpucost_tag_key_prefixes", None) or [""]
    found = [f"{prefix}{key}" for key in keys if key for prefix in prefixes]
    return list(dict.fromkeys(found))


# -------------------------------------------------------------------------------------------------
# One-line errors

_LOCK_PID = re.compile(r"\(PID (\d+)\)")


_QUOTED_CONTENT = re.compile(r"(?i)\b(original line|line content|input)\s*:")


def first_line(
    error: BaseException | str,
    *,
    hide: Iterable[str] = (),
    hide_quoted: bool = False,
    limit: int = 300,
) -> str:
    """An error's message in one line, safe to print: its first line, cut where a reader starts
    quoting the input (DuckDB's CSV errors: ``Original Line:``, ``Line content:``, ``Input:``: a
    landed file's bytes never reach a message), each string of ``hide`` (a path) replaced by
    ``<file>``, with ``hide_quoted`` every double-quoted text replaced by ``"…"``, at most ``limit``
    characters. "" when the message is empty. The one definition: the CLI, ``gpucost alerts``, the
    validation suites and the landing probes all print errors through it."""
    text = (str(error).strip().splitlines() or [""])[0]
    text = _QUOTED_CONTENT.split(text)[0].strip()
    for secret in hide:
        if secret:
            text = text.replace(secret, "<file>")
    if hide_quoted:
        text = re.sub(r'"[^"]*"', '"…"', text)
    return text[:limit]


def one_line_error(error: BaseException) -> str | None:
    """An actionable one-line message for an error of a known kind (else None): the paths named are
    the ones the user gave, never a file's content."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is a dependency
        duckdb = None
    text = str(error)
    if duckdb is not None and isinstance(error, duckdb.Error):
        if "lock" in text.lower() and ("conflicting lock" in text.lower() or "set lock" in text):
            pid = _LOCK_PID.search(text)
            holder = f" (PID {pid[1]})" if pid else ""
            target = re.search(r'file "([^"]+)"', text)
            where = target[1] if target else "the warehouse"
            return (
                f"{where} is locked by another process{holder}: a dbt build, a notebook or a "
                "dashboard holds it open for writing; wait for it or close it, then retry"
            )
        if "Not a directory" in text:
            return (
                f"cannot open a file under a path that is not a folder: {first_line(text)}; "
                "point the option (or GPUCOST_WAREHOUSE) at a path inside a folder"
            )
        if "Permission denied" in text:
            return f"permission denied: {first_line(text)}; choose a path you can write to"
        return None
    if isinstance(error, PermissionError):
        return (
            f"permission denied: {error.filename or text}; choose a path you can write to "
            "(or fix the folder's permissions)"
        )
    if isinstance(error, NotADirectoryError):
        return (
            f"{error.filename or text}: part of this path is a file, not a folder; choose "
            "another path"
        )
    if isinstance(error, IsADirectoryError):
        return f"{error.filename or text} is a folder; give a file name"
    if isinstance(error, FileNotFoundError):
        return f"not found: {error.filename or text}"
    if isinstance(error, FileExistsError):
        return f"{error.filename or text} exists and is in the way (a file where a folder goes?)"
    if isinstance(error, PseudonymiseError):
        return text
    if isinstance(error, OSError) and error.filename:
        return f"{error.filename}: {error.strerror or first_line(text)}"
    return None
