"""The default embedder (ONNX Runtime, no torch) against the reference (sentence-transformers)."""

import json
import os
import subprocess
import sys
import threading
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from pegasus.embedding.embed import Embedder, _Batcher, load_encoder, model_path
from pegasus.embedding.encoder import read_folder
from pegasus.errors import ConfigError

MODEL = "all-MiniLM-L6-v2"


def corpus() -> list[str]:
    """Varied texts: the demo's turns, single words, names, dates, accents, other scripts,
    empty and blank text, and texts far past the model's 256 word pieces."""
    turns = [turn["content"]
             for sample in sorted((resources.files("pegasus") / "data" / "samples").iterdir(),
                                  key=lambda p: p.name) if sample.name.endswith(".json")
             for turn in json.loads(sample.read_text(encoding="utf-8"))["transcript"]]
    words = ["Sarah", "acme", "platform migration", "works at", "lives in", "a", "I",
             "2023-05-01", "7 May 2023", "émigré café naïve", "東京の天気", "Ελληνικά", "🙂 ok",
             "", "   ", "  padded on both sides  ", "UPPER CASE SHOUTING", "don't; won't!"]
    long = [" ".join(turns) * 3, "word " * 600, "supercalifragilistic " * 120]
    return turns + words + long


@pytest.fixture(scope="module")
def both() -> tuple[np.ndarray, np.ndarray, list[str]]:
    texts = corpus()
    onnx = load_encoder(MODEL, "onnx").encode(texts)
    reference = load_encoder(MODEL, "sentence-transformers").encode(texts)
    return onnx, reference, texts


@pytest.mark.slow  # the reference embedder loads torch
def test_onnx_vectors_equal_the_reference_ones(both):
    onnx, reference, texts = both
    assert onnx.shape == reference.shape == (len(texts), 384)
    cosines = (onnx * reference).sum(axis=1) / np.linalg.norm(onnx, axis=1) \
        / np.linalg.norm(reference, axis=1)
    assert cosines.min() >= 0.9999, [t[:40] for t, c in zip(texts, cosines, strict=True)
                                     if c < 0.9999]
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow  # the reference embedder loads torch
def test_long_texts_are_cut_where_the_reference_cuts_them(both):
    onnx, _, texts = both
    encoder = load_encoder(MODEL, "onnx")
    assert encoder.max_length == 256
    long = texts[-2]  # 600 word pieces (and [CLS], [SEP])
    cut = encoder.tokenizer.decode(encoder.tokenizer.encode(long).ids)
    assert len(encoder.tokenizer.encode(long).ids) == 256
    # The first 254 pieces decide the vector: text beyond them changes nothing.
    assert np.allclose(encoder.encode([long + " elephant giraffe"])[0], onnx[-2], atol=1e-6)
    assert np.allclose(encoder.encode([cut])[0], onnx[-2], atol=1e-5)


@pytest.mark.slow  # the reference embedder loads torch
def test_padding_in_a_batch_changes_no_vector(both):
    onnx, _, texts = both
    encoder = load_encoder(MODEL, "onnx")
    alone = np.stack([encoder.encode([t])[0] for t in texts[:12]])
    assert np.allclose(alone, onnx[:12], atol=1e-5)


def test_a_folder_the_encoder_cannot_run_is_refused_with_the_way_out(tmp_path):
    source = Path(model_path(MODEL))
    config = json.loads((source / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    with pytest.raises(ConfigError, match="not a BERT model.*sentence-transformers"):
        read_folder(tmp_path)
    with pytest.raises(ConfigError, match="unknown embedding runtime"):
        load_encoder(MODEL, "tensorflow")


def test_the_default_embedder_imports_no_torch_and_leaves_the_environment_alone():
    code = ("import os, sys; before = dict(os.environ)\n"
            "from pegasus.embedding.embed import Embedder\n"
            "v = Embedder().embed(['hello there', 'Sarah'])\n"
            "assert v.shape == (2, 384)\n"
            "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
            "if m in sys.modules), dict(os.environ) == before)")
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[] True"


def test_concurrent_callers_share_one_model_call_and_get_their_own_rows():
    encoder = load_encoder(MODEL, "onnx")
    calls: list[int] = []

    class Counting:
        def encode(self, texts, batch_size=64):
            calls.append(len(texts))
            return encoder.encode(texts)

    batcher = _Batcher(window_s=0.2)
    texts = [["alpha", "beta"], ["gamma"], ["delta", "epsilon", "zeta"], ["eta"]]
    results: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(texts))

    def call(n: int) -> None:
        start.wait()
        results[n] = batcher.encode(Counting(), texts[n])

    threads = [threading.Thread(target=call, args=(n,)) for n in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [7]
    for n, group in enumerate(texts):
        assert np.allclose(results[n], encoder.encode(group), atol=1e-5)


def test_a_model_error_reaches_every_caller_of_the_batch():
    class Broken:
        def encode(self, texts, batch_size=64):
            raise RuntimeError("model gone")

    batcher = _Batcher(window_s=0.1)
    errors: list[str] = []
    start = threading.Barrier(3)

    def call() -> None:
        start.wait()
        try:
            batcher.encode(Broken(), ["x"])
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == ["model gone"] * 3


def test_the_embedder_with_a_batch_window_gives_the_same_vectors():
    plain = Embedder(MODEL, 384).embed(["Sarah", "acme", "Sarah"])
    batched = Embedder(MODEL, 384, batch_window_ms=1).embed(["Sarah", "acme", "Sarah"])
    assert np.allclose(plain, batched, atol=1e-6) and np.allclose(plain[0], plain[2])


def test_the_built_graph_is_kept_on_disk_and_loaded_from_it_with_the_same_vectors(tmp_path):
    """Given a cache folder, the graph is built once and written there; a later load reads the
    file (no build) and gives the same vectors; a damaged file is removed and the graph built
    in memory (the next load writes it again)."""
    from pegasus.embedding import encoder as encoder_module
    from pegasus.embedding.encoder import OnnxEncoder

    folder, texts = Path(model_path(MODEL)), corpus()[:12]
    in_memory = OnnxEncoder(folder).encode(texts)
    first = OnnxEncoder(folder, cache=tmp_path).encode(texts)
    [built] = tmp_path.glob("*.onnx")
    assert built.stat().st_size > 80_000_000 and not list(tmp_path.glob("*.part"))
    written = built.stat().st_mtime_ns

    def no_build(*_args, **_kwargs):
        raise AssertionError("the graph was built again although its file is there")

    original = encoder_module.build_graph
    encoder_module.build_graph = no_build
    try:
        again = OnnxEncoder(folder, cache=tmp_path).encode(texts)
    finally:
        encoder_module.build_graph = original
    assert np.array_equal(first, in_memory) and np.array_equal(again, in_memory)
    assert built.stat().st_mtime_ns == written

    built.write_bytes(b"not an onnx model")
    damaged = OnnxEncoder(folder, cache=tmp_path).encode(texts)
    assert np.array_equal(damaged, in_memory) and not built.exists()
    assert np.array_equal(OnnxEncoder(folder, cache=tmp_path).encode(texts), in_memory)
    assert built.stat().st_size > 80_000_000


def test_an_unwritable_cache_folder_builds_in_memory(tmp_path):
    from pegasus.embedding.encoder import OnnxEncoder

    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    vectors = OnnxEncoder(Path(model_path(MODEL)), cache=blocked / "models").encode(["boss"])
    assert vectors.shape == (1, 384) and abs(float(np.linalg.norm(vectors)) - 1.0) < 1e-5
