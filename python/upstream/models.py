"""The stand-in Hugging Face cache that vLLM's scheduler tests read, made offline.

Owns: writing, under an ``HF_HOME``, the hub-cache layout (``hub/models--ORG--NAME/
refs/main`` and ``snapshots/REV/``) for each model id the selected tests name, holding
what ``ModelConfig`` and vLLM's multimodal registry read: ``config.json`` from
transformers' own config class for the architecture (its defaults, with the few fields
the tests depend on set), and for multimodal models a processor (image processor
settings and a word-level tokenizer that knows only the model's special tokens, at
the ids its config names). No weights are written; nothing is downloaded.

Must not: copy a model's files from anywhere, or hold anything a test could read as a
real model's behaviour (the scheduler tests read sizes, token ids and the processor's
placeholder counts, never logits).

Why each field that is set is set:
- ``dtype``: without it vLLM looks up the weights' dtype in ``model.safetensors``,
  retrying the hub (offline: 2 s of back-off per lookup, minutes over the suite);
- llava's text ``max_position_embeddings`` 4096: llava-1.5-7b's own, which a test
  that asks for ``max_model_len=4096`` needs (transformers' Llama default is 2048).
"""

import hashlib
import os

#: The model ids vLLM 0.33.0's scheduler tests name (``model=`` in tests/v1/core).
MODELS = (
    "facebook/opt-125m",
    "llava-hf/llava-1.5-7b-hf",
    "Qwen/Qwen2.5-VL-3B-Instruct",
    "Qwen/Qwen3-Next-80B-A3B-Instruct",
)


def _snapshot(root, repo):
    """The snapshot folder for ``repo`` in the hub cache under ``root``, with
    ``refs/main`` naming it (a revision derived from the id: stable between runs)."""
    rev = hashlib.sha1(repo.encode()).hexdigest()
    base = os.path.join(root, "hub", "models--" + repo.replace("/", "--"))
    snap = os.path.join(base, "snapshots", rev)
    os.makedirs(snap, exist_ok=True)
    os.makedirs(os.path.join(base, "refs"), exist_ok=True)
    with open(os.path.join(base, "refs", "main"), "w", encoding="utf-8") as f:
        f.write(rev)
    return snap


def _tokenizer(special):
    """A fast tokenizer whose vocabulary is three control tokens and ``special``
    (token → id, the ids the model's config names)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **special}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    fast.add_special_tokens({"additional_special_tokens": list(special)})
    return fast


def make(root):
    """Writes the stand-in cache under ``root`` (an ``HF_HOME``); returns ``root``."""
    import transformers as tf

    c = tf.OPTConfig(dtype="float16")
    c.architectures = ["OPTForCausalLM"]
    c.save_pretrained(_snapshot(root, "facebook/opt-125m"))

    c = tf.LlavaConfig(dtype="float16", text_config={"model_type": "llama", "max_position_embeddings": 4096})
    c.architectures = ["LlavaForConditionalGeneration"]
    snap = _snapshot(root, "llava-hf/llava-1.5-7b-hf")
    c.save_pretrained(snap)
    tok = _tokenizer({"<image>": c.image_token_index, "<pad>": c.image_token_index + 1})
    images = tf.CLIPImageProcessor(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})
    tf.LlavaProcessor(
        image_processor=images, tokenizer=tok, patch_size=14, vision_feature_select_strategy="default"
    ).save_pretrained(snap)

    c = tf.Qwen2_5_VLConfig(dtype="bfloat16")
    c.architectures = ["Qwen2_5_VLForConditionalGeneration"]
    snap = _snapshot(root, "Qwen/Qwen2.5-VL-3B-Instruct")
    c.save_pretrained(snap)
    tok = _tokenizer(
        {
            "<|vision_start|>": c.vision_start_token_id,
            "<|vision_end|>": c.vision_end_token_id,
            "<|image_pad|>": c.image_token_id,
            "<|video_pad|>": c.video_token_id,
        }
    )
    tf.Qwen2_5_VLProcessor(
        image_processor=tf.Qwen2VLImageProcessor(), tokenizer=tok, video_processor=tf.Qwen2VLVideoProcessor()
    ).save_pretrained(snap)

    c = tf.Qwen3NextConfig(dtype="bfloat16")
    c.architectures = ["Qwen3NextForCausalLM"]
    c.save_pretrained(_snapshot(root, "Qwen/Qwen3-Next-80B-A3B-Instruct"))
    return root
