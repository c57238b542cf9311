// Prepared cases in the judge's own device memory, which no launcher maps: the pristine inputs
// (copied into the arena before each launch, and what the arena's inputs must still equal after
// it) and the reference of the compared elements with their rows. Each set crosses to the device
// once per experiment; every check, the determinism runs and the timed slots then compare on the
// device and read back only summaries.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "harness/prepared_case.h"
#include "runtime/runtime.h"

namespace ak {

struct DeviceCase {
  std::vector<std::unique_ptr<Buffer>> inputs;     // one per input, as PreparedCase::input_bytes
  std::vector<std::unique_ptr<Buffer>> reference;  // one per output, as PreparedCase::reference
  std::unique_ptr<Buffer> rows;                    // int64 rows; null when every element is compared

  // The scan of output `index` at `output` (device memory) against this case.
  OutputScanJob scan_job(const PreparedCase& prepared, size_t index, const void* output,
                         const Tolerance& tolerance) const;
};

class DeviceCases {
 public:
  explicit DeviceCases(Runtime& runtime) : runtime_(runtime) {}

  // The device copy of `prepared`, uploaded on first use; without `with_reference` only its
  // inputs (a timing pool's sets need their reference only in the one slot verified). Holding
  // the PreparedCase keeps its address from being reused by another case while the copy is here.
  std::shared_ptr<const DeviceCase> get(const std::shared_ptr<const PreparedCase>& prepared,
                                        bool with_reference = true);

 private:
  struct Entry {
    std::shared_ptr<const PreparedCase> prepared;
    std::shared_ptr<DeviceCase> device;
  };
  // Makes room for `bytes` more: past the bound, this store lets go of every copy (a caller
  // keeps the one it holds).
  void reserve(size_t bytes);
  Runtime& runtime_;
  std::map<const PreparedCase*, Entry> entries_;
  size_t bytes_ = 0;
};

}  // namespace ak
