"""A model `llama-perplexity` can read a text with: the weights and hyperparameters of a model
the worker writes (`worker --write-tiny-model`, which has no vocabulary) and the tokenizer of
a vocabulary-only GGUF (upstream's models/ggml-vocab-llama-spm.gguf: 32,000 tokens, so the
weights must be written with --n-vocab 32000).

    python scripts/perplexity-model.py WEIGHTS VOCAB OUT

Needs upstream's `gguf` package (PyPI, with numpy) in the Python that runs it: not a
dependency of patchctl, only of this script, which makes the model scripts/perf-prefixes.sh
reads a text with.
"""

from __future__ import annotations

import sys

import gguf  # type: ignore[import-not-found]


def _copy(writer: gguf.GGUFWriter, field: gguf.ReaderField) -> None:
    kind = field.types[0]
    sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
    writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)


def main(weights_path: str, vocab_path: str, out: str) -> None:
    weights, vocab = gguf.GGUFReader(weights_path), gguf.GGUFReader(vocab_path)
    arch = weights.fields[gguf.Keys.General.ARCHITECTURE].contents()
    n_vocab = len(vocab.fields[gguf.Keys.Tokenizer.LIST].contents())
    embd = next(t for t in weights.tensors if t.name == "token_embd.weight")
    if int(embd.shape[-1]) != n_vocab:
        sys.exit(f"{weights_path}: {embd.shape[-1]} tokens, the vocabulary has {n_vocab}")
    writer = gguf.GGUFWriter(out, arch)
    for field in weights.fields.values():
        if not field.name.startswith(("GGUF.", "tokenizer.", gguf.Keys.General.ARCHITECTURE)):
            _copy(writer, field)
    for field in vocab.fields.values():
        if field.name.startswith("tokenizer."):
            _copy(writer, field)
    for t in weights.tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in weights.tensors:
        writer.write_tensor_data(t.data, tensor_endianess=weights.endianess)
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
