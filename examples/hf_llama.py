"""A user's model as most users have one: Hugging Face transformers' own LlamaForCausalLM, built
from a config (random weights, nothing fetched from the Hub) the size of the compact LLaMA
(768 wide, 12 layers, grouped-query attention with 4 key/value heads, SwiGLU 2048, 32000 tokens).

    autokernel run --model examples/hf_llama.py:HFLlama --input-shape 8,512 --dtype fp16

HFLlama7B4L is the GPU-bound configuration: the 7B model's shapes, four of its layers.
"""
import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM


class HFLlama(nn.Module):
    default_input_shape = (8, 512)
    config = dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
                  num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        config = LlamaConfig(**self.config, attn_implementation="sdpa", use_cache=False)
        self.model = LlamaForCausalLM(config)
        self.vocab_size = config.vocab_size

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


class HFLlama7B4L(HFLlama):
    default_input_shape = (1, 2048)
    config = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=4, num_attention_heads=32,
                  num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096)
