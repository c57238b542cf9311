// flash_attention (host starter kernel): o = softmax(q · kᵀ · scale, causal mask) · v per head.
// Inputs q[B, H, S, D], k[B, Hkv, S, D], v[B, Hkv, S, D] (grouped-query when Hkv < H: head h
// reads kv head h / (H / Hkv)); scalars scale, causal (1: query i sees keys j <= i); output
// o[B, H, S, D]; all one dtype (fp32, fp16 or bf16), computed in float. Any views with whole rows
// ([B, S, H, D] buffers seen as [B, H, S, D] among them).
//
// One variant, the flash-attention recurrence on the CPU: tiles of BLOCK_Q queries of one head
// are spread over OpenMP threads; a tile walks the keys in blocks of BLOCK_KV (converted to float
// once per tile), and each query keeps a running max, a running sum of exponentials and an
// unnormalized output, rescaled whenever the max grows. The full S x S score matrix never
// exists. Tuning parameters:
//   BLOCK_Q   queries per tile: how many queries reuse each block of keys and values
//   BLOCK_KV  keys per block: the stretch of scores kept at once
//   VEC       independent accumulators in the q · k dot products (vector width)
//
// @tune BLOCK_Q: 1, 4, 16, 64
// @tune BLOCK_KV: 16, 64, 256
// @tune VEC: 1, 8
// @require (BLOCK_Q <= S || BLOCK_Q == 1) && (BLOCK_KV <= S || BLOCK_KV == 16)
#include "autokernel/host_kernel.h"

#ifndef BLOCK_Q
#define BLOCK_Q 16
#endif
#ifndef BLOCK_KV
#define BLOCK_KV 64
#endif
#ifndef VEC
#define VEC 8
#endif

namespace {

using namespace ak::host;

// One query's running state over the key blocks seen so far.
struct QueryState {
  float max;   // largest score so far
  float sum;   // sum of exp(score - max)
  float* out;  // sum of exp(score - max) * v, D floats
};

// Folds one block of `count` keys into a query's state. scores and probs have room for count
// floats each.
void attend_block(const float* __restrict q, const float* __restrict keys, const float* __restrict values,
                  int64_t count, int64_t dim, float scale, float* __restrict scores, float* __restrict probs,
                  QueryState& state) {
  for (int64_t j = 0; j < count; ++j) scores[j] = dot<VEC>(q, keys + j * dim, dim) * scale;
  const float new_max = std::max(state.max, lane_max<VEC>(scores, count));
  const float rescale = fast_exp(state.max - new_max);  // 0 on the first block (max = -inf)
  exp_shifted(scores, new_max, count, probs);
  state.sum = state.sum * rescale + lane_sum<VEC, float>(count, [&](int64_t j) { return probs[j]; });
  state.max = new_max;
  float* __restrict out = state.out;
  for (int64_t d = 0; d < dim; ++d) out[d] *= rescale;
  for (int64_t j = 0; j < count; ++j) {
    const float p = probs[j];
    const float* __restrict v = values + j * dim;
    for (int64_t d = 0; d < dim; ++d) out[d] += p * v[d];
  }
}

struct Shape {
  int64_t batch, heads, kv_heads, seq, dim;
};

// One head's [S, D] matrix of a view: where it starts and how far apart its rows lie.
template <class T>
struct HeadRows {
  T* start;
  int64_t row_stride;
};

template <class T>
HeadRows<T> head_rows(const ak_tensor& t, int64_t b, int64_t h) {
  return {static_cast<T*>(t.data) + b * t.strides[0] + h * t.strides[1], t.strides[2]};
}

// Per-thread float scratch: the tile's queries, one key block and one value block, the scores and
// probabilities of one query against a block, and the tile's unnormalized outputs.
struct Scratch {
  float *q, *keys, *values, *scores, *probs, *out;
  static int64_t floats(int64_t block_q, int64_t block_kv, int64_t dim) {
    return 2 * block_q * dim + 2 * block_kv * dim + 2 * block_kv;
  }
  Scratch(float* base, int64_t block_q, int64_t block_kv, int64_t dim)
      : q(base),
        keys(q + block_q * dim),
        values(keys + block_kv * dim),
        scores(values + block_kv * dim),
        probs(scores + block_kv),
        out(probs + block_kv) {}
};

// Attends queries [i0, i0 + count) of one head, whose [S, D] matrices are q, k, v and o.
template <class T>
void attend_tile(HeadRows<const T> q_head, HeadRows<const T> k_head, HeadRows<const T> v_head,
                 HeadRows<T> o_head, int64_t i0, int64_t count, const Shape& shape, float scale, bool causal,
                 Scratch& s) {
  const int64_t dim = shape.dim;
  const float* q = rows_view(q_head.start + i0 * q_head.row_stride, q_head.row_stride, count, dim, s.q);
  QueryState states[BLOCK_Q];
  for (int64_t qi = 0; qi < count; ++qi)
    states[qi] = {-std::numeric_limits<float>::infinity(), 0.0f, s.out + qi * dim};
  for (int64_t e = 0; e < count * dim; ++e) s.out[e] = 0.0f;

  const int64_t key_end = causal ? i0 + count : shape.seq;  // keys past the tile's last query are masked
  for (int64_t j0 = 0; j0 < key_end; j0 += BLOCK_KV) {
    const int64_t block = std::min<int64_t>(BLOCK_KV, key_end - j0);
    const float* keys =
        rows_view(k_head.start + j0 * k_head.row_stride, k_head.row_stride, block, dim, s.keys);
    const float* values =
        rows_view(v_head.start + j0 * v_head.row_stride, v_head.row_stride, block, dim, s.values);
    for (int64_t qi = 0; qi < count; ++qi) {
      const int64_t visible = causal ? std::min(block, i0 + qi - j0 + 1) : block;
      if (visible > 0)
        attend_block(q + qi * dim, keys, values, visible, dim, scale, s.scores, s.probs, states[qi]);
    }
  }
  for (int64_t qi = 0; qi < count; ++qi) {
    const float inverse = 1.0f / states[qi].sum;
    for (int64_t d = 0; d < dim; ++d) states[qi].out[d] *= inverse;
  }
  store_rows(s.out, count, dim, o_head.start + i0 * o_head.row_stride, o_head.row_stride);
}

template <class T>
int flash_attention(const ak_call* call) {
  const ak_tensor &q = call->inputs[0], &k = call->inputs[1];
  const Shape shape{q.shape[0], q.shape[1], k.shape[1], q.shape[2], q.shape[3]};
  if (q.ndim != 4 || shape.heads % shape.kv_heads != 0 ||
      !has_shape(k, {shape.batch, shape.kv_heads, shape.seq, shape.dim}) ||
      !has_shape(call->inputs[2], {shape.batch, shape.kv_heads, shape.seq, shape.dim}) ||
      !has_shape(call->outputs[0], {shape.batch, shape.heads, shape.seq, shape.dim}))
    return AK_ERR_UNSUPPORTED;
  const float scale = static_cast<float>(call->scalars[0]);
  const bool causal = call->scalars[1] != 0.0;
  const int64_t group = shape.heads / shape.kv_heads;
  const int64_t block_q = std::min<int64_t>(BLOCK_Q, shape.seq);
  const int64_t block_kv = std::min<int64_t>(BLOCK_KV, shape.seq);
  const int64_t tiles = ceil_div(shape.seq, block_q);

  ThreadScratch scratch(Scratch::floats(block_q, block_kv, shape.dim));
#pragma omp parallel
  {
    Scratch s(scratch.mine(), block_q, block_kv, shape.dim);
#pragma omp for schedule(static) collapse(2)
    for (int64_t bh = 0; bh < shape.batch * shape.heads; ++bh) {
      for (int64_t tile = 0; tile < tiles; ++tile) {
        const int64_t b = bh / shape.heads, h = bh % shape.heads, i0 = tile * block_q;
        attend_tile(head_rows<const T>(q, b, h), head_rows<const T>(k, b, h / group),
                    head_rows<const T>(call->inputs[2], b, h / group), head_rows<T>(call->outputs[0], b, h),
                    i0, std::min(block_q, shape.seq - i0), shape, scale, causal, s);
      }
    }
  }
  return AK_OK;
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (!valid_rows_call(call, 3, 1, 2) ||
      !all_dtype({&call->inputs[1], &call->inputs[2], &call->outputs[0]}, call->inputs[0].dtype))
    return AK_ERR_UNSUPPORTED;
  return guarded([&] {
    return dispatch(call->inputs[0].dtype,
                    [&](auto tag) { return flash_attention<typename decltype(tag)::type>(call); });
  });
}
