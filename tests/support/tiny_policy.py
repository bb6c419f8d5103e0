"""A tiny tool-calling policy built locally (no download), for TRL tests on CPU.

The tokenizer is a byte-level BPE trained here on a few sentences, with Qwen's
special tokens and TRL's Qwen3 chat template (tool support). The model is a
2-layer Qwen3 whose attention and MLP outputs are zeroed, so the next token
depends on the last token only: after the assistant turn opens it writes one
of ``calls`` (each a whole tool call, one added token; 3:1 against
``"Done."``), then ends its turn. Rewards therefore vary within a GRPO group,
and the tools really are called.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

ANSWER = "Done."


def tool_call_text(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def build(out_dir: Path, calls: list[str], *, corpus: list[str] = (), seed: int = 0) -> Path:
    """Save a tokenizer and model under ``out_dir`` (a ``from_pretrained`` folder); returns it.

    ``corpus``: texts the tokenizer should encode compactly (the tools' JSON schemas: shorter prompts).
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
    from trl.chat_template_utils import qwen3_chat_template

    torch.manual_seed(seed)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    texts = [
        *corpus,
        qwen3_chat_template,
        "Use the echo tool to say exactly: hello world",
        "Rename the file notes.txt",
        (
            '{"type": "function", "function": {"name": "fs_read", "description": "Read a file", "parameters": '
            '{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}'
        ),
    ]
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(texts * 4, trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left"
    )
    tok.add_tokens([*calls, ANSWER])
    tok.chat_template = qwen3_chat_template

    vocab = len(tok)
    config = Qwen3Config(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen3ForCausalLM(config)
    turn_open = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True, return_dict=False
    )[-1]
    with torch.no_grad():
        for layer in model.model.layers:  # the residual stream is the last token's embedding only
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        emb = model.model.embed_tokens.weight
        emb.zero_()
        emb[:, 0] = 1.0  # every token: "end the turn"
        emb[turn_open, 0], emb[turn_open, 1] = 0.0, 1.0  # the token opening an assistant turn: "act"
        head = model.lm_head.weight
        head.zero_()
        head[tok.eos_token_id, 0] = 3.0
        for text in calls:
            head[tok.convert_tokens_to_ids(text), 1] = 3.0
        head[tok.convert_tokens_to_ids(ANSWER), 1] = 3.0 - math.log(3 * len(calls)) / 8  # RMSNorm scales by 8
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir
