"""The memory page's sign-in: a signed session cookie, its CSRF token, and the same-origin check.

This is the boundary between a browser and a user's memory. The cookie holds no API key: it is
`fingerprint.expires.nonce.mac`, where the fingerprint is an HMAC of the key (so the user is
found again, and a key removed from the key map ends its sessions), and the MAC signs the rest.
The signing secret is derived from the whole key map, so every worker and replica that serves
the same keys accepts the same cookies without shared state, and knowing one key is not enough
to sign for another. Every change the page makes is a POST carrying the session's CSRF token
(an HMAC of the session's nonce), and a POST another site sends is refused (403) before it is
read further.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlparse

from fastapi import Request

from pegasus.serve.auth import KeyRing

COOKIE = "pegasus_session"


@dataclass(frozen=True)
class Session:
    """A signed-in browser: whose memory it sees, and the token its changes must carry."""

    user: str
    csrf: str


class Sessions:
    """Issues and checks the page's session cookies for one key map."""

    def __init__(self, keys: KeyRing, lifetime_s: float) -> None:
        entries = sorted(keys.entries)
        self._secret = hashlib.sha256(b"pegasus page session\0" + b"\0".join(
            key for key, _ in entries)).digest()
        self._prints = [(self._mac(b"key", key)[:32], user) for key, user in entries]
        self.lifetime_s = lifetime_s

    def _mac(self, purpose: bytes, value: bytes) -> str:
        return hmac.new(self._secret, purpose + b"\0" + value, hashlib.sha256).hexdigest()

    def issue(self, key: str) -> str:
        """A cookie value for a key already known to stand for a user."""
        payload = ".".join([self._mac(b"key", key.encode())[:32],
                            str(int(time.time() + self.lifetime_s)), secrets.token_hex(16)])
        return f"{payload}.{self._mac(b'session', payload.encode())}"

    def check(self, cookie: str | None) -> Session | None:
        """The session a cookie stands for; None when it is absent, forged, expired, or its
        key is no longer in the key map."""
        if not cookie or len(cookie) > 200:
            return None
        payload, _, mac = cookie.rpartition(".")
        parts = payload.split(".")
        if len(parts) != 3 or not hmac.compare_digest(
                mac.encode(), self._mac(b"session", payload.encode()).encode()):
            return None
        fingerprint, expires, nonce = parts
        if not expires.isdigit() or int(expires) < time.time():
            return None
        user = None
        for known, owner in self._prints:  # no early exit: the time says nothing of the keys
            if hmac.compare_digest(known.encode(), fingerprint.encode()):
                user = owner
        if user is None:
            return None
        return Session(user=user, csrf=self._mac(b"csrf", nonce.encode()))


def csrf_matches(session: Session, presented: str | None) -> bool:
    """Whether a form carried this session's CSRF token."""
    return bool(presented) and hmac.compare_digest(session.csrf.encode(),
                                                   str(presented).encode())


def same_origin(request: Request) -> bool:
    """Whether a browser sent this request from the page's own origin. A browser says where a
    POST comes from: Sec-Fetch-Site (every current browser; it holds behind a reverse proxy
    that rewrites Host), else Origin, compared with Host. A client that says neither (curl) is
    not a browser another site can drive, and still needs the CSRF token for any change."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return origin != "null" and urlparse(origin).netloc == request.headers.get("host")


def set_cookie(response, value: str, request: Request, lifetime_s: float) -> None:
    """The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's
    request carries it), Secure when the page is served over HTTPS."""
    response.set_cookie(COOKIE, value, max_age=int(lifetime_s), path="/", httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


def clear_cookie(response, request: Request) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")
