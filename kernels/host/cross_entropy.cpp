// cross_entropy (host starter kernel): loss[r] = logsumexp(logits[r, :]) - logits[r, targets[r]],
// mean_loss[0] = mean of loss. Inputs logits[M, V] (fp32, fp16 or bf16), targets[M] (int64);
// outputs loss[M] and mean_loss[1], both fp32. A target outside [0, V) is AK_ERR_UNSUPPORTED,
// reported before anything is computed.
//
// One variant: rows are spread over OpenMP threads; each row is a max pass, an exp pass (the
// max taken out so extreme logits cannot overflow) and a sum pass in double. The mean adds the
// row losses in row order afterwards, so it does not depend on the threads. Tuning parameters:
//   VEC            independent accumulators in the max and exp-sum passes (vector width)
//   ROWS_PER_TASK  rows per OpenMP chunk
//
// @tune VEC: 1, 4, 8, 16
// @tune ROWS_PER_TASK: 1, 16
// @require ROWS_PER_TASK <= M || ROWS_PER_TASK == 1
#include "autokernel/host_kernel.h"

#ifndef VEC
#define VEC 8
#endif
#ifndef ROWS_PER_TASK
#define ROWS_PER_TASK 1
#endif

namespace {

using namespace ak::host;

// exps: room for n floats.
double row_loss(const float* __restrict logits, int64_t n, int64_t target, float* __restrict exps) {
  const float row_max = lane_max<VEC>(logits, n);
  exp_shifted(logits, row_max, n, exps);
  const double sum_exp = lane_sum<VEC, double>(n, [&](int64_t i) { return exps[i]; });
  return static_cast<double>(row_max) + std::log(sum_exp) - static_cast<double>(logits[target]);
}

template <class T>
int cross_entropy(const ak_call* call) {
  const ak_tensor& logits = call->inputs[0];
  const int64_t rows = logits.shape[0], vocab = logits.shape[1];
  if (logits.ndim != 2 || !has_shape(call->inputs[1], {rows}) || !has_shape(call->outputs[0], {rows}) ||
      !has_shape(call->outputs[1], {1}))
    return AK_ERR_UNSUPPORTED;
  const int64_t* targets = static_cast<const int64_t*>(call->inputs[1].data);
  for (int64_t r = 0; r < rows; ++r)
    if (targets[r] < 0 || targets[r] >= vocab) return AK_ERR_UNSUPPORTED;
  const T* logits_data = static_cast<const T*>(logits.data);
  float* loss = static_cast<float*>(call->outputs[0].data);

  ThreadScratch scratch(2 * vocab);  // a converted row of logits and its exponentials
#pragma omp parallel
  {
    float* row = scratch.mine();
    float* exps = row + vocab;
#pragma omp for schedule(static, ROWS_PER_TASK)
    for (int64_t r = 0; r < rows; ++r) {
      const float* logits_row = float_view(logits_data + r * vocab, vocab, row);
      loss[r] = static_cast<float>(row_loss(logits_row, vocab, targets[r], exps));
    }
  }
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += loss[r];
  *static_cast<float*>(call->outputs[1].data) = static_cast<float>(total / static_cast<double>(rows));
  return AK_OK;
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (!valid_call(call, 2, 2, 0) || call->inputs[1].dtype != AK_I64 ||
      !all_dtype({&call->outputs[0], &call->outputs[1]}, AK_F32))
    return AK_ERR_UNSUPPORTED;
  return guarded([&] {
    return dispatch(call->inputs[0].dtype,
                    [&](auto tag) { return cross_entropy<typename decltype(tag)::type>(call); });
  });
}
