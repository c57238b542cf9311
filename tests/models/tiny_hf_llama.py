"""transformers' own LlamaForCausalLM in a tiny configuration (2 layers, 64 wide, 4 heads over 2
key/value heads, vocabulary 128; random weights, nothing fetched), as a user's model file: the
whole command-line path runs on it in test_export, and the user's script there applies the
export to the LlamaForCausalLM that `build` returns, not to this wrapper.
"""
import torch
import transformers
from torch import nn

SETTINGS = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=64, use_cache=False)


def build(seed=0):
    config = transformers.LlamaConfig(**SETTINGS)
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(config)


class TinyLlama(nn.Module):
    default_input_shape = (2, 16)
    vocab_size = SETTINGS["vocab_size"]

    def __init__(self):
        super().__init__()
        self.model = build()

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


class TinyLlamaWithCache(TinyLlama):
    """The whole output, as transformers returns it with its cache on: logits and a DynamicCache
    (the model judge flattens it as verify does)."""

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=True)
