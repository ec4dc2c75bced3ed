"""Start-up checks of what the environment gives Pegasus: each wrong setting is one ConfigError
naming it, before anything is served or written (docs/reliability.md, "Configuration")."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

from pegasus.errors import ConfigError
from pegasus.settings import Settings


def check_home(settings: Settings) -> None:
    """PEGASUS_HOME is a folder this process can write (staging files, centres, the local
    Neo4j live there): created when missing."""
    home = settings.home
    try:
        home.mkdir(parents=True, exist_ok=True)
        if not home.is_dir():
            raise NotADirectoryError(f"{home} is a file")
        with tempfile.TemporaryFile(dir=home):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if home.exists() and not home.is_dir():
            reason = "it is a file, not a folder"
        raise ConfigError(f"PEGASUS_HOME={home} cannot be used ({reason}): set it to a folder "
                          "this user can write") from None


def check_embedding_model(settings: Settings) -> None:
    """PEGASUS_EMBEDDING_MODEL names a model this machine has: the packaged default, a local
    folder, or one in the local Hugging Face cache (Pegasus never downloads a model)."""
    from huggingface_hub import try_to_load_from_cache

    from pegasus.embedding.embed import model_path

    name = settings.embedding_model
    path = model_path(name)  # the packaged default: a ConfigError when its package is missing
    if Path(path).is_dir():
        return
    # sentence-transformers reads a bare name as one of its own models.
    for repo in (name, f"sentence-transformers/{name}"):
        try:
            if isinstance(try_to_load_from_cache(repo, "config.json"), str):
                return
        except ValueError:  # not a valid repository id
            continue
    raise ConfigError(f"PEGASUS_EMBEDDING_MODEL={name!r}: no such model (not a folder, not the "
                      "packaged all-MiniLM-L6-v2, not in the local Hugging Face cache); set it "
                      "to one of those")


def check_port(host: str, port: int) -> None:
    """The address `pegasus serve` is to listen on is free."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # As uvicorn binds: a port left in TIME_WAIT by the last run is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc}): another "
                          "program uses it; choose another port (--port, "
                          "PEGASUS_SERVE_PORT)") from None
