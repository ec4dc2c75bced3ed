"""API keys: each key stands for exactly one user, so a request can only reach that user's memory."""

from __future__ import annotations

import hmac
import json
from pathlib import Path

from pegasus.errors import ConfigError
from pegasus.settings import Settings, secret_text


def load_keys(settings: Settings) -> dict[str, str]:
    """API key → user id, from PEGASUS_API_KEYS and the key file (PEGASUS_API_KEY_FILE)."""
    keys = {secret_text(key) or "": user for key, user in settings.api_keys.items()}
    if settings.api_key_file is not None:
        keys.update(_read_key_file(settings.api_key_file))
    for key, user in keys.items():
        if not isinstance(key, str) or len(key) < 8:
            raise ConfigError("every API key must be a string of at least 8 characters")
        if not isinstance(user, str) or not user.strip() or len(user) > 200:
            raise ConfigError(f"the user id for key …{key[-4:]} must be a non-empty string")
    return keys


def _read_key_file(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"API key file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f'API key file {path} must hold a JSON object {{"key": "user id"}}')
    return data


class KeyRing:
    """Looks a presented key up in constant time per stored key (no early exit on a mismatch)."""

    def __init__(self, keys: dict[str, str]) -> None:
        self._keys = [(k.encode(), user) for k, user in keys.items()]

    def user_for(self, presented: str | None) -> str | None:
        if not presented:
            return None
        candidate = presented.encode()
        found = None
        for key, user in self._keys:
            if hmac.compare_digest(key, candidate):
                found = user
        return found

    @property
    def entries(self) -> list[tuple[bytes, str]]:
        """(key, user id) pairs, for what is derived from the keys (the page's sessions)."""
        return list(self._keys)

    @property
    def users(self) -> set[str]:
        return {user for _, user in self._keys}
