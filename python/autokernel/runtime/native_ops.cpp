// The custom ops' CPU, CUDA and Autograd kernels in C++ (built and loaded by native.py), so that a
// call from Inductor's generated code or from an applied eager model reaches the kernel module's
// ak_launch without entering Python: a Python implementation costs tens of microseconds a call,
// more than the fused kernel it runs saves on a launch-bound forward pass.
//
// What a call runs is still decided in Python (kernel_table.py), once per call layout: a call whose
// layout (every input's dtype, device, sizes and strides, and the scalars) has no entry here takes
// the operator's Python twin (<ns>::_<op>_python), which runs the kernel table or PyTorch's op and,
// when a kernel ran, hands back its ak_launch and the call struct it filled (ak_native_remember).
// The entry keeps them; later calls of that layout allocate the outputs, write the data pointers
// and the stream into a copy of the struct (and a fresh workspace from PyTorch's allocator where
// the op gives one, as KernelModule.launch does), and launch. The struct stays opaque here: Python
// reports where its pointers live (ak_native_layout), so abi.h has one mirror (abi.py), not two.
//
// Autograd: a call that autograd must record takes the twin, whose backward is PyTorch's ops
// (backward.py); any other call goes below autograd to the kernels above.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using Launch = int (*)(void*);

struct CallLayout {  // where the ABI's call struct holds what changes from call to call
  size_t size = 0;
  std::vector<size_t> input_data, output_data;
  size_t stream = 0;
  size_t workspace = 0, workspace_bytes = 0;
};
CallLayout g_layout;

using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& key) const noexcept {
    size_t hash = key.size();
    for (int64_t value : key)
      hash ^= std::hash<int64_t>{}(value) + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2);
    return hash;
  }
};

struct Entry {
  Launch launch = nullptr;
  std::vector<std::byte> call;
  std::vector<std::vector<int64_t>> output_sizes;
  std::vector<std::vector<int64_t>> output_strides;  // the layout the twin made (a swapped view too)
  std::vector<c10::ScalarType> output_dtypes;
  int64_t* counter = nullptr;  // the kernel's call count, owned by Python (kernel_table.py)
};

// What the Python twin remembered during this thread's miss (see NativeKernel::miss).
struct Remembered {
  bool set = false;
  Launch launch = nullptr;
  std::vector<std::byte> call;
  int64_t* counter = nullptr;
};
thread_local Remembered t_remembered;

std::mutex g_tables_mutex;
std::vector<struct OpTable*> g_tables;  // every op's table, for ak_native_clear

struct OpTable {
  size_t inputs, scalars, outputs;
  c10::OperatorHandle twin;
  std::mutex mutex;
  std::unordered_map<Key, std::shared_ptr<const Entry>, KeyHash> entries;
};

Key layout_key(const torch::jit::Stack& stack, const OpTable& table) {
  Key key;
  key.reserve(64);
  auto args = torch::jit::last(stack, table.inputs + table.scalars);
  for (size_t i = 0; i < table.inputs; ++i) {
    const at::Tensor& tensor = args[i].toTensor();
    key.push_back(static_cast<int64_t>(tensor.scalar_type()));
    key.push_back(static_cast<int64_t>(tensor.device().type()));
    key.push_back(tensor.device().index());
    key.push_back(tensor.dim());
    for (int64_t size : tensor.sizes()) key.push_back(size);
    for (int64_t stride : tensor.strides()) key.push_back(stride);
  }
  for (size_t i = table.inputs; i < args.size(); ++i)
    key.push_back(std::bit_cast<int64_t>(args[i].toDouble()));
  return key;
}

void* current_stream(const at::Device& device) {
  if (device.type() != c10::DeviceType::CUDA) return nullptr;
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device).native_handle();
}

constexpr size_t kMaxCallSize = 4096;

void put_pointer(std::array<std::byte, kMaxCallSize>& call, size_t offset, const void* pointer) {
  std::memcpy(call.data() + offset, &pointer, sizeof pointer);
}

// Runs the entry's kernel on the stack's inputs; false when the kernel declined (the entry is then
// dropped and the twin runs the call).
bool launch(const Entry& entry, torch::jit::Stack* stack, const OpTable& table) {
  auto args = torch::jit::last(*stack, table.inputs + table.scalars);
  const at::Device device = args[0].toTensor().device();
  std::vector<at::Tensor> outputs;
  outputs.reserve(entry.output_sizes.size());
  for (size_t i = 0; i < entry.output_sizes.size(); ++i)
    outputs.push_back(at::empty_strided(entry.output_sizes[i], entry.output_strides[i],
                                        at::TensorOptions().dtype(entry.output_dtypes[i]).device(device)));
  // The struct is filled in a copy on the stack: another thread may launch the same entry.
  alignas(16) std::array<std::byte, kMaxCallSize> call;
  std::memcpy(call.data(), entry.call.data(), entry.call.size());
  for (size_t i = 0; i < table.inputs; ++i)
    put_pointer(call, g_layout.input_data[i], args[i].toTensor().data_ptr());
  for (size_t i = 0; i < outputs.size(); ++i)
    put_pointer(call, g_layout.output_data[i], outputs[i].data_ptr());
  put_pointer(call, g_layout.stream, current_stream(device));
  int64_t workspace_bytes = 0;
  std::memcpy(&workspace_bytes, entry.call.data() + g_layout.workspace_bytes, sizeof workspace_bytes);
  at::Tensor workspace;  // freed after the launch: reused only by work queued after it on this stream
  if (workspace_bytes > 0) {
    workspace = at::empty({workspace_bytes}, at::TensorOptions().dtype(at::kByte).device(device));
    put_pointer(call, g_layout.workspace, workspace.data_ptr());
  }
  if (entry.launch(call.data()) != 0) return false;
  std::atomic_ref<int64_t>(*entry.counter).fetch_add(1, std::memory_order_relaxed);
  torch::jit::drop(*stack, table.inputs + table.scalars);
  for (auto& output : outputs) stack->emplace_back(std::move(output));
  return true;
}

class NativeKernel final : public c10::OperatorKernel {
 public:
  explicit NativeKernel(OpTable* table) : table_(table) {}

  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
    Key key = layout_key(*stack, *table_);
    {
      std::unique_lock lock(table_->mutex);
      auto found = table_->entries.find(key);
      if (found != table_->entries.end()) {
        std::shared_ptr<const Entry> entry = found->second;  // kept alive if the table is cleared meanwhile
        lock.unlock();
        if (launch(*entry, stack, *table_)) return;
        lock.lock();
        table_->entries.erase(key);
      }
    }
    miss(std::move(key), keys, stack);
  }

 private:
  void miss(Key key, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
    t_remembered = Remembered{};
    table_->twin.redispatchBoxed(c10::DispatchKeySet(keys.highestPriorityTypeId()), stack);
    if (!t_remembered.set) return;  // PyTorch's op ran it, or a kernel ran outside the twin
    auto entry = std::make_shared<Entry>(
        Entry{t_remembered.launch, std::move(t_remembered.call), {}, {}, {}, t_remembered.counter});
    t_remembered = Remembered{};
    for (const auto& value : torch::jit::last(*stack, table_->outputs)) {  // the twin's outputs
      const at::Tensor& output = value.toTensor();
      entry->output_sizes.emplace_back(output.sizes().begin(), output.sizes().end());
      entry->output_strides.emplace_back(output.strides().begin(), output.strides().end());
      entry->output_dtypes.push_back(output.scalar_type());
    }
    std::lock_guard lock(table_->mutex);
    table_->entries.insert_or_assign(std::move(key), std::move(entry));
  }

  OpTable* table_;
};

class AutogradKernel final : public c10::OperatorKernel {
 public:
  explicit AutogradKernel(OpTable* table) : table_(table) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
    if (records_gradient(*stack)) {
      table_->twin.callBoxed(stack);
      return;
    }
    op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
  }

 private:
  bool records_gradient(const torch::jit::Stack& stack) const {
    if (!c10::GradMode::is_enabled()) return false;
    auto args = torch::jit::last(stack, table_->inputs + table_->scalars);
    for (size_t i = 0; i < table_->inputs; ++i)
      if (args[i].toTensor().requires_grad()) return true;
    return false;
  }

  OpTable* table_;
};

// Libraries and tables live as long as the process: the dispatcher may still call a kernel while
// static objects are destroyed at exit, so they are never freed.
torch::Library& library_for(const std::string& ns, c10::DispatchKey key) {
  static auto* libraries = new std::vector<std::unique_ptr<torch::Library>>();
  static auto* keys = new std::vector<std::pair<std::string, c10::DispatchKey>>();
  for (size_t i = 0; i < keys->size(); ++i)
    if ((*keys)[i] == std::pair(ns, key)) return *(*libraries)[i];
  libraries->push_back(std::make_unique<torch::Library>(torch::Library::IMPL, ns, key, __FILE__, __LINE__));
  keys->emplace_back(ns, key);
  return *libraries->back();
}

std::string g_error;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* ak_native_error() {
  return g_error.c_str();
}

__attribute__((visibility("default"))) int ak_native_layout(int64_t size, int64_t n_inputs,
                                                            const int64_t* input_data, int64_t n_outputs,
                                                            const int64_t* output_data, int64_t stream,
                                                            int64_t workspace, int64_t workspace_bytes) {
  if (size <= 0 || static_cast<size_t>(size) > kMaxCallSize) {
    g_error = "the ABI's call struct is larger than the native kernels' copy of it";
    return 1;
  }
  g_layout.size = static_cast<size_t>(size);
  g_layout.input_data.assign(input_data, input_data + n_inputs);
  g_layout.output_data.assign(output_data, output_data + n_outputs);
  g_layout.stream = static_cast<size_t>(stream);
  g_layout.workspace = static_cast<size_t>(workspace);
  g_layout.workspace_bytes = static_cast<size_t>(workspace_bytes);
  return 0;
}

// Registers the C++ kernels of <ns>::<op>, whose misses and gradients go to <ns>::<twin>.
__attribute__((visibility("default"))) int ak_native_install(const char* ns, const char* op, const char* twin,
                                                             int64_t n_inputs, int64_t n_scalars) {
  try {
    auto handle = c10::Dispatcher::singleton().findSchemaOrThrow((std::string(ns) + "::" + twin).c_str(), "");
    auto* table = new OpTable{static_cast<size_t>(n_inputs),
                              static_cast<size_t>(n_scalars),
                              handle.schema().returns().size(),
                              handle,
                              {},
                              {}};
    {
      std::lock_guard lock(g_tables_mutex);
      g_tables.push_back(table);
    }
    for (auto key : {c10::DispatchKey::CPU, c10::DispatchKey::CUDA})
      library_for(ns, key).impl(
          op, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<NativeKernel>(table)));
    library_for(ns, c10::DispatchKey::Autograd)
        .impl(op, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<AutogradKernel>(table)));
    return 0;
  } catch (const std::exception& error) {
    g_error = error.what();
    return 1;
  }
}

// Called by the twin after its kernel ran: what the miss that called it keeps for the layout.
__attribute__((visibility("default"))) void ak_native_remember(void* launch, const void* call,
                                                               int64_t* counter) {
  t_remembered.set = true;
  t_remembered.launch = reinterpret_cast<Launch>(launch);
  const auto* bytes = static_cast<const std::byte*>(call);
  t_remembered.call.assign(bytes, bytes + g_layout.size);
  t_remembered.counter = counter;
}

// Forgets every layout's kernel: the kernel table changed.
__attribute__((visibility("default"))) void ak_native_clear() {
  std::lock_guard lock(g_tables_mutex);
  for (OpTable* table : g_tables) {
    std::lock_guard table_lock(table->mutex);
    table->entries.clear();
  }
}

}  // extern "C"
