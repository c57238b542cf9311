#include "harness/device_case.h"

namespace ak {
namespace {

std::unique_ptr<Buffer> upload(Runtime& runtime, const void* data, size_t bytes) {
  auto buffer = runtime.allocate(bytes);
  runtime.upload(buffer->data(), data, bytes);
  return buffer;
}

}  // namespace

OutputScanJob DeviceCase::scan_job(const PreparedCase& prepared, size_t index, const void* output,
                                   const Tolerance& tolerance) const {
  const TensorSpec& spec = prepared.signature.outputs.at(index);
  OutputScanJob job;
  job.output = output;
  job.dtype = spec.dtype;
  job.numel = spec.numel();
  job.reference = static_cast<const float*>(reference.at(index)->data());
  job.rows = rows ? static_cast<const int64_t*>(rows->data()) : nullptr;
  job.n_rows = static_cast<int64_t>(prepared.rows.size());
  job.row_len = spec.row_length();
  job.atol = tolerance.atol * prepared.reference_rms.at(index);
  job.rtol = tolerance.rtol;
  return job;
}

void DeviceCases::reserve(size_t bytes) {
  // An experiment's sets fit many times over; the bound keeps a long sweep of large problems
  // from filling the device.
  if (bytes_ + bytes > runtime_.info().memory_bytes / 4) {
    entries_.clear();
    bytes_ = 0;
  }
  bytes_ += bytes;
}

std::shared_ptr<const DeviceCase> DeviceCases::get(const std::shared_ptr<const PreparedCase>& prepared,
                                                   bool with_reference) {
  std::shared_ptr<DeviceCase> device;
  if (auto it = entries_.find(prepared.get()); it != entries_.end()) device = it->second.device;
  const bool had_inputs = device != nullptr;
  if (!device) {
    reserve(prepared->input_size());
    device = std::make_shared<DeviceCase>();
    for (const auto& input : prepared->input_bytes)
      device->inputs.push_back(upload(runtime_, input.data(), input.size()));
  }
  if (with_reference && device->reference.empty()) {
    reserve(prepared->reference_size());
    for (const auto& ref : prepared->reference)
      device->reference.push_back(upload(runtime_, ref.data(), ref.size() * sizeof(float)));
    if (!prepared->rows.empty())
      device->rows = upload(runtime_, prepared->rows.data(), prepared->rows.size() * sizeof(int64_t));
  }
  // Again, with its inputs counted, when the reference's reserve() let go of it.
  if (entries_.try_emplace(prepared.get(), Entry{prepared, device}).second && had_inputs)
    bytes_ += prepared->input_size();
  return device;
}

}  // namespace ak
