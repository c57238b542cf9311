"""Hugging Face transformers' own GPT2LMHeadModel as a user's model file: GPT-2 small's shapes (768
wide, 12 layers, 12 heads, 50257 tokens, 1024 positions), random weights, nothing fetched.

    autokernel run --model examples/hf_gpt2.py:HFGPT2 --input-shape 8,512 --dtype fp16

Its LayerNorms and causal attention are ours to take; its Conv1D projections are addmm calls.
"""
import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel


class HFGPT2(nn.Module):
    default_input_shape = (8, 512)
    config = dict(n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024)

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        config = GPT2Config(**self.config, attn_implementation="sdpa", use_cache=False)
        self.model = GPT2LMHeadModel(config)
        self.vocab_size = config.vocab_size

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits
