"""The sentence encoder without torch: a BERT model folder's safetensors weights as an ONNX
graph (encoder, mean pooling, L2 normalisation), run by ONNX Runtime on `tokenizers`' word
pieces. The graph is built from the packaged weights (about a second) and, given a cache folder
(`$PEGASUS_HOME/models`), written there once: ONNX Runtime then loads it from the file, and a
process that does so holds ~110 MiB less than one that built the graph in memory (#38's 400 MB
per serve worker; docs/decisions.md, "The built graph on disk")."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from pegasus.errors import ConfigError

_OPSET = 17  # LayerNormalization is a single op from 17 on
_GRAPH_VERSION = 1  # bump when build_graph changes what it builds: cached files are rebuilt
_I64 = np.int64


def release_freed_memory() -> None:
    """Give the heap the weights and the graph were built in back to the system: glibc keeps
    freed memory for reuse, and a serve worker's RSS stayed ~30 MB higher for nothing (#38).
    Elsewhere than glibc, nothing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def read_folder(folder: Path) -> tuple[dict, int]:
    """(the BERT config, the max sequence length) of a sentence-transformers model folder;
    a clear error for a folder this encoder cannot run (not BERT, not mean pooling)."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    pooling_file = folder / "1_Pooling" / "config.json"
    pooling = json.loads(pooling_file.read_text(encoding="utf-8")) if pooling_file.exists() else {}
    if (config.get("model_type") != "bert" or config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
            or not pooling.get("pooling_mode_mean_tokens")
            or not (folder / "model.safetensors").exists()
            or not (folder / "tokenizer.json").exists()):
        raise ConfigError(
            f"{folder} is not a BERT model with mean pooling, model.safetensors and "
            "tokenizer.json; run it with PEGASUS_EMBEDDING_RUNTIME=sentence-transformers "
            "(pip install 'pegasus-memory[reference]')")
    st_file = folder / "sentence_bert_config.json"
    st_config = json.loads(st_file.read_text(encoding="utf-8")) if st_file.exists() else {}
    return config, int(st_config.get("max_seq_length", config["max_position_embeddings"]))


def build_graph(weights: dict[str, np.ndarray], config: dict) -> bytes:
    """The serialized ONNX model: input_ids, attention_mask (int64, [batch, length]) →
    embedding (float32, [batch, hidden]), mean-pooled over the mask and unit length."""
    from onnx import TensorProto, helper, numpy_helper

    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    eps = float(config["layer_norm_eps"])
    nodes: list = []
    initializers: list = []

    def const(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(kind: str, *inputs: str, **attributes) -> str:
        out = f"{kind.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attributes))
        return out

    def weight(name: str) -> str:
        return const(name, weights[name].astype(np.float32))

    def linear(x: str, prefix: str) -> str:
        # torch's Linear keeps W as [out, in]: the graph multiplies by its transpose.
        w = const(f"{prefix}.weight.T", np.ascontiguousarray(weights[f"{prefix}.weight"].T))
        return op("Add", op("MatMul", x, w), weight(f"{prefix}.bias"))

    def layer_norm(x: str, prefix: str) -> str:
        return op("LayerNormalization", x, weight(f"{prefix}.weight"), weight(f"{prefix}.bias"),
                  axis=-1, epsilon=eps)

    def split_heads(x: str, perm: list[int]) -> str:
        return op("Transpose", op("Reshape", x, heads_shape), perm=perm)

    heads_shape = const("heads_shape", np.array([0, 0, heads, hidden // heads], _I64))
    merged_shape = const("merged_shape", np.array([0, 0, hidden], _I64))
    one = const("one", np.array(1.0, np.float32))

    # Embeddings: word + position (0 … length−1) + token type 0 (one sentence), normalised.
    length = op("Gather", op("Shape", "input_ids"), const("axis1", np.array(1, _I64)), axis=0)
    positions = op("Range", const("zero_i", np.array(0, _I64)), length,
                   const("one_i", np.array(1, _I64)))
    x = op("Add", op("Gather", weight("embeddings.word_embeddings.weight"), "input_ids"),
           op("Gather", weight("embeddings.position_embeddings.weight"), positions))
    x = op("Add", x, const("token_type0", weights["embeddings.token_type_embeddings.weight"][0]
                          .astype(np.float32)))
    x = layer_norm(x, "embeddings.LayerNorm")

    # Padding is never attended to: −10,000 on its scores, as BERT's own extended mask.
    mask = op("Cast", "attention_mask", to=TensorProto.FLOAT)
    score_bias = op("Unsqueeze", op("Mul", op("Sub", one, mask),
                                    const("masked", np.array(-10000.0, np.float32))),
                    const("axes12", np.array([1, 2], _I64)))
    scale = const("scale", np.array(1 / math.sqrt(hidden // heads), np.float32))
    half = const("half", np.array(0.5, np.float32))
    root2 = const("root2", np.array(math.sqrt(2.0), np.float32))
    for n in range(config["num_hidden_layers"]):
        prefix = f"encoder.layer.{n}"
        q = split_heads(linear(x, f"{prefix}.attention.self.query"), [0, 2, 1, 3])
        k = split_heads(linear(x, f"{prefix}.attention.self.key"), [0, 2, 3, 1])
        v = split_heads(linear(x, f"{prefix}.attention.self.value"), [0, 2, 1, 3])
        scores = op("Add", op("Mul", op("MatMul", q, k), scale), score_bias)
        context = op("MatMul", op("Softmax", scores, axis=-1), v)
        context = op("Reshape", op("Transpose", context, perm=[0, 2, 1, 3]), merged_shape)
        x = layer_norm(op("Add", linear(context, f"{prefix}.attention.output.dense"), x),
                       f"{prefix}.attention.output.LayerNorm")
        inner = linear(x, f"{prefix}.intermediate.dense")
        # BERT's exact GELU: x · ½ · (1 + erf(x / √2)).
        inner = op("Mul", op("Mul", inner, half), op("Add", one, op("Erf", op("Div", inner, root2))))
        x = layer_norm(op("Add", linear(inner, f"{prefix}.output.dense"), x),
                       f"{prefix}.output.LayerNorm")

    # Mean over the real tokens, then unit length (sentence-transformers' Pooling, Normalize).
    axis1 = const("axes1", np.array([1], _I64))
    token_mask = op("Unsqueeze", mask, const("axes2", np.array([2], _I64)))
    summed = op("ReduceSum", op("Mul", x, token_mask), axis1, keepdims=0)
    counts = op("Max", op("ReduceSum", token_mask, axis1, keepdims=0),
                const("min_count", np.array(1e-9, np.float32)))
    mean = op("Div", summed, counts)
    norm = op("Sqrt", op("ReduceSum", op("Mul", mean, mean),
                         const("axes_last", np.array([-1], _I64)), keepdims=1))
    nodes.append(helper.make_node(
        "Div", [mean, op("Max", norm, const("min_norm", np.array(1e-12, np.float32)))],
        ["embedding"]))

    ids = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "length"])
           for name in ("input_ids", "attention_mask")]
    out = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])
    graph = helper.make_graph(nodes, "sentence_encoder", ids, [out], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    return model.SerializeToString()


def _weights(folder: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(folder / "model.safetensors"))


def cached_graph(folder: Path, config: dict, cache: Path) -> Path | None:
    """The built graph's file in `cache`, written first if missing (atomically: processes
    starting together each write a whole file, the last rename wins). Named by what it is
    built from (the weights file's path, size and time, the config, the builder's version),
    so new weights or a new builder get a new file. None when the folder cannot be written:
    the caller builds in memory, as before."""
    weights = folder / "model.safetensors"
    stat = weights.stat()
    key = json.dumps([str(weights.resolve()), stat.st_size, stat.st_mtime_ns, config,
                      _GRAPH_VERSION, _OPSET], sort_keys=True)
    path = cache / f"{folder.name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"
    if path.is_file():
        return path
    graph: bytes | None = None
    try:
        cache.mkdir(parents=True, exist_ok=True)
        graph = build_graph(_weights(folder), config)
        handle, temporary = tempfile.mkstemp(dir=cache, suffix=".part")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(graph)
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
    except OSError:
        return None
    finally:
        graph = None  # the built bytes are not kept while the session loads the file
        release_freed_memory()
    return path


class OnnxEncoder:
    """A sentence-transformers BERT folder, run by ONNX Runtime: `encode(texts)` gives one
    unit-length float32 row per text, as SentenceTransformer.encode(normalize_embeddings=True)."""

    runtime = "onnx"

    def __init__(self, folder: str | Path, threads: int = 1,
                 cache: Path | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        folder = Path(folder)
        config, self.max_length = read_folder(folder)
        self.dimensions = int(config["hidden_size"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        # sentence-transformers truncates every text to max_seq_length word pieces.
        self.tokenizer.enable_truncation(max_length=self.max_length)
        options = onnxruntime.SessionOptions()
        # A recall embeds a handful of words: one thread that sleeps when idle leaves the
        # cores to Neo4j and the other requests (a spinning pool took them for nothing).
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        built = cached_graph(folder, config, cache) if cache is not None else None
        if built is not None:
            try:
                self.session = onnxruntime.InferenceSession(
                    str(built), options, providers=["CPUExecutionProvider"])
                return
            except Exception:  # noqa: BLE001 - a damaged file: built again in memory below
                built.unlink(missing_ok=True)
        graph = build_graph(_weights(folder), config)
        self.session = onnxruntime.InferenceSession(
            graph, options, providers=["CPUExecutionProvider"])
        del graph
        release_freed_memory()

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Unit-length embeddings, one row per text; batches of similar lengths pad little."""
        # sentence-transformers strips each text before tokenizing it.
        encodings = [self.tokenizer.encode(text.strip()) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=_I64)
            mask = np.zeros((len(chunk), width), dtype=_I64)
            for row, i in enumerate(chunk):
                pieces = encodings[i].ids
                ids[row, :len(pieces)] = pieces
                mask[row, :len(pieces)] = 1
            (vectors,) = self.session.run(["embedding"], {"input_ids": ids, "attention_mask": mask})
            out[chunk] = vectors
        return out
