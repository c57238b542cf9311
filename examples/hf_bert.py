"""Hugging Face transformers' own BertForMaskedLM as a user's model file: BERT base's shapes (768
wide, 12 layers, 12 heads, 3072 in the MLP, 30522 tokens, 512 positions), random weights, nothing
fetched.

    autokernel run --model examples/hf_bert.py:HFBert --input-shape 8,512 --dtype fp16

Called without an attention mask (no padding), its attention is non-causal SDPA, ours to take.
"""
import torch
from torch import nn
from transformers import BertConfig, BertForMaskedLM


class HFBert(nn.Module):
    default_input_shape = (8, 512)
    config = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                  vocab_size=30522, max_position_embeddings=512)

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        config = BertConfig(**self.config, attn_implementation="sdpa")
        self.model = BertForMaskedLM(config)
        self.vocab_size = config.vocab_size

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits
