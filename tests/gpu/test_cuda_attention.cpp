// The wgmma flash attention on the GPU through the real CLI: its variants (ping-pong, persistence,
// chained items, the stores, wide key tiles, split tails) and a model's projection views, each
// through every stage.
#include "cuda_harness.h"

namespace ak::test {
namespace {

// The wgmma variant at head dimensions 128 and 64 (one 64-column slab of Q, K and V, P V 64 wide:
// BERT's, GPT-2's and the compact LLaMA's heads), with the consumer warpgroups taking turns on the
// tensor cores (ping-pong, the default) and without: causal and not, grouped-query, S not a
// multiple of the 128-row tile (a turn left unmatched would hang the block: TIMEOUT, not PASS).
// Ping-pong turns and persistent blocks, each on and off; the last two shapes give every block
// of a persistent grid several query tiles (more tiles than an H100 or H200 has SMs), among them
// D = 128 with two Q buffers (the default 2 stages of K and of V) and ragged causal tiles. The
// fourth configuration keeps each row's maximum lazily (O rescaled only when it grows by more than
// 2^8); the fifth runs causal calls head by head in pairs, where the others deal them heaviest
// first across heads (BALANCE: every causal shape here fits in L2); the last takes 3 stages, and
// at D = 128 one Q buffer. The last shape has 2100 keys: the defaults rescale lazily from 2048
// (LAZY_RESCALE 2), and its ragged last tile runs in the masked loop after the unmasked one.
TEST_F(CudaHarness, FlashAttentionWgmmaPassesEveryStageWithAndWithoutPingPongAndPersistence) {
  for (const std::string config :
       {"#define PINGPONG 0\n#define PERSISTENT 1", "#define PINGPONG 1\n#define PERSISTENT 0",
        "#define PINGPONG 1\n#define PERSISTENT 1", "#define LAZY_RESCALE 1", "#define BALANCE 0",
        "#define STAGES 3"})
    for (const std::string shape :
         {"2x4x300x128:causal=1", "1x8x520x128:causal=0,kv_heads=2", "2x12x512x64:causal=1",
          "1x8x520x64:causal=0,kv_heads=2", "4x16x1000x64:causal=1,kv_heads=4", "2x16x1100x128:causal=0",
          "1x4x2100x128:causal=0"}) {
      const auto j =
          bench(starter_with("flash_attention", config), "flash_attention", shape, {"--dtype", "bf16"});
      EXPECT_EQ(j.value("status", ""), "PASS") << config << ", " << shape << "\n" << j.dump(2);
    }
}

// Chained items (CHAIN, D = 64): a block's items as one stream of key tiles, each seam issuing the
// next item's first S with this one's last P V. Every shape gives blocks several items (more than
// an H100 or H200 has SMs): causal and not, grouped-query, ragged last tiles (300, 1000 keys), and
// items of a single key tile (100 keys: no steps between two seams). With ping-pong turns and
// without (a turn left unmatched at a seam hangs the block: TIMEOUT, not PASS), and one block per
// causal pair (PERSISTENT 0, BALANCE 0: two items, one seam, per block).
TEST_F(CudaHarness, FlashAttentionChainedItemsPassEveryStage) {
  for (const std::string config :
       {"#define CHAIN 1\n#define TMA_STORE 0", "#define CHAIN 1\n#define PINGPONG 0",
        "#define CHAIN 1\n#define PERSISTENT 0\n#define BALANCE 0"})
    for (const auto& [shape, dtype] :
         {std::pair{"8x12x512x64:causal=0", "bf16"}, std::pair{"8x12x512x64:causal=1", "fp16"},
          std::pair{"4x16x1000x64:causal=1,kv_heads=4", "bf16"},
          std::pair{"8x8x300x64:causal=0,kv_heads=2", "fp16"}, std::pair{"16x16x100x64:causal=1", "bf16"}}) {
      const auto j =
          bench(starter_with("flash_attention", config), "flash_attention", shape, {"--dtype", dtype});
      EXPECT_EQ(j.value("status", ""), "PASS") << config << ", " << shape << "\n" << j.dump(2);
    }
}

// O through shared memory and TMA (TMA_STORE, the default): rows past S skipped by TMA (300, 520,
// 1100, 100 rows, items whose second warpgroup lies wholly past S), D = 64 and 128 (two slabs), a
// model's [B, S, H, D] output seen as [B, H, S, D] (bshd: O's own strides in the map), and with
// chained items, whose seam stores one item's O while the next item's first S runs; and O stored
// from registers (TMA_STORE 0) on the same shapes.
TEST_F(CudaHarness, FlashAttentionTmaAndRegisterStoresPassEveryStage) {
  for (const std::string config :
       {"#define TMA_STORE 1", "#define TMA_STORE 1\n#define CHAIN 1", "#define TMA_STORE 0"})
    for (const auto& [shape, dtype] :
         {std::pair{"2x4x300x128:causal=1", "bf16"}, std::pair{"1x8x520x64:causal=0,kv_heads=2", "fp16"},
          std::pair{"8x12x512x64:causal=0", "bf16"}, std::pair{"16x16x100x64:causal=1", "bf16"},
          std::pair{"2x8x520x128:bshd=1,causal=1,kv_heads=2", "bf16"},
          std::pair{"2x16x1100x128:causal=0", "fp16"}}) {
      const auto j =
          bench(starter_with("flash_attention", config), "flash_attention", shape, {"--dtype", dtype});
      EXPECT_EQ(j.value("status", ""), "PASS") << config << ", " << shape << "\n" << j.dump(2);
    }
}

// Non-causal calls in wider key tiles (KEYS): 176 keys (11 k-steps, V in one box of 176 keys per
// 64 columns, 2 stages at D = 128, 3 at D = 64), fp16 and bf16, with ragged last tiles (520, 1100,
// 300 keys), grouped-query heads and more tiles than SMs. A causal shape checks that those keep
// their 128-key tiles under the same build.
TEST_F(CudaHarness, FlashAttentionWideKeyTilesPassEveryStage) {
  expect_every_stage_passes(starter_with("flash_attention", "#define KEYS 176"), "flash_attention",
                            {{"1x8x520x128:causal=0,kv_heads=2", "bf16"},
                             {"2x16x1100x128:causal=0", "fp16"},
                             {"1x8x520x64:causal=0,kv_heads=2", "fp16"},
                             {"2x12x512x64:causal=0", "bf16"},
                             {"3x5x300x64:causal=0", "bf16"},
                             {"2x4x300x128:causal=1", "fp16"}});
}

// Split tails (SPLIT_TAIL 1): non-causal calls whose last round of items fits the
// grid twice run those items as a helper and an owner piece each (132 SMs on the H100 and H200):
// 4 x 14 x 1024 x 64 (448 items, 52 split), 520 keys in 5 tiles (3 for the helper, 2 for the
// owner, its last ragged; rows past S), 700 keys (3 and 3), 4096 keys at D = 128 (lazy rescaling:
// the pieces meet at different maxima); with ping-pong turns and without, O through TMA and from
// registers.
TEST_F(CudaHarness, FlashAttentionSplitTailsPassEveryStage) {
  for (const std::string config : {"#define SPLIT_TAIL 1", "#define SPLIT_TAIL 1\n#define PINGPONG 0",
                                   "#define SPLIT_TAIL 1\n#define TMA_STORE 0"})
    for (const auto& [shape, dtype] :
         {std::pair{"4x14x1024x64:causal=0", "fp16"}, std::pair{"1x8x520x128:causal=0,kv_heads=2", "bf16"},
          std::pair{"1x5x700x64:causal=0", "bf16"}, std::pair{"1x2x4096x128:causal=0", "fp16"}}) {
      const auto j =
          bench(starter_with("flash_attention", config), "flash_attention", shape, {"--dtype", dtype});
      EXPECT_EQ(j.value("status", ""), "PASS") << config << ", " << shape << "\n" << j.dump(2);
    }
}

// q, k, v and o as a model's [B, S, H, D] projections viewed as [B, H, S, D] (bshd = 1): the
// wgmma path (TMA over those strides), the mma path (fp32 falls to simt) and rotary's vector and
// scalar paths, with grouped-query heads, ragged tiles and one batch.
TEST_F(CudaHarness, AttentionAndRotaryTakeAModelsProjectionsThroughEveryStage) {
  expect_every_stage_passes(std::string(AK_SOURCE_DIR) + "/kernels/cuda/flash_attention.cu",
                            "flash_attention",
                            {{"2x8x520x128:bshd=1,causal=1,kv_heads=2", "bf16"},
                             {"1x12x512x64:bshd=1,causal=0", "fp16"},
                             {"2x4x300x64:bshd=1,causal=1,kv_heads=4", "fp32"}});
  expect_every_stage_passes(starter_with("flash_attention", "#define PATH 0"), "flash_attention",
                            {{"2x8x300x128:bshd=1,causal=1,kv_heads=2", "fp16"}});
  expect_every_stage_passes(
      std::string(AK_SOURCE_DIR) + "/kernels/cuda/rotary_embedding.cu", "rotary_embedding",
      {{"2x12x512x64:bshd=1", "fp16"}, {"1x32x300x128:bshd=1", "bf16"}, {"3x5x17x6:bshd=1", "fp32"}});
}

}  // namespace
}  // namespace ak::test
