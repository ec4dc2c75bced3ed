"""Shared HTTP pieces of `pegasus serve`: ids, the error body, the API key's user."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

# An id needs one character that is not whitespace as Python's str.strip() sees it (which,
# unlike JSON Schema's \s, includes U+001C–U+001F and U+0085): the schema says what the
# server accepts, exactly.
ID_PATTERN = r"[^\s\x1c-\x1f\x85]"
ID = Field(min_length=1, max_length=200, pattern=ID_PATTERN)


class ErrorDetail(BaseModel):
    message: str
    type: str


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {400: "Not acceptable as it is", 401: "Missing or unknown API key",
            404: "Not found in this user's memory",
            409: "A conversation already committed, or a name meaning several entities",
            422: "Invalid request", 502: "The upstream model or the LLM failed",
            503: "Neo4j is unreachable or the server is not configured for this"}
    return {code: {"model": ErrorBody, "description": text[code]} for code in codes}


def error(status: int, message: str, kind: str, headers: dict[str, str] | None = None
          ) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status,
                        headers=headers)


class Unauthorized(Exception):
    pass


_bearer = HTTPBearer(auto_error=False, description="An API key from the server's key map")


def current_user(request: Request,
                 credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
                 ) -> str:
    """The user the presented API key stands for; 401 otherwise."""
    user = request.app.state.keys.user_for(credentials.credentials if credentials else None)
    if user is None:
        raise Unauthorized
    return user


User = Annotated[str, Depends(current_user)]
