// `autokernel device`: what this device is, and its measured ceilings (cached per device).
#include <iomanip>
#include <iostream>

#include "cli/command.h"
#include "runtime/ceilings_cache.h"
#include "runtime/runtime.h"

namespace ak::cli {
namespace {

std::string gib(size_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1ull << 30) << " GiB";
  return out.str();
}

std::string mib(size_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1ull << 20) << " MiB";
  return out.str();
}

}  // namespace

Command device_command() {
  return {"device", "show the device and its measured ceilings (copy bandwidth, matrix rate)",
          [](CLI::App& app) -> Run {
            struct Options {
              std::string backend = "auto";
              bool remeasure = false, json = false;
            };
            auto o = std::make_shared<Options>();
            app.add_option("--backend", o->backend, "cuda, host, or auto (cuda when a GPU answers)")
                ->check(CLI::IsMember({"auto", "cuda", "host"}));
            app.add_flag("--remeasure", o->remeasure, "measure again instead of using the cached ceilings");
            app.add_flag("--json", o->json, "print JSON");
            return [o] {
              const Backend backend = o->backend == "auto" ? default_backend() : parse_backend(o->backend);
              auto runtime = make_runtime(backend);
              const DeviceInfo& d = runtime->info();
              const bool cached = !o->remeasure && cached_ceilings(d).has_value();
              if (!cached && !o->json) std::cerr << "autokernel: measuring ceilings of " << d.name << "...\n";
              const Ceilings c = device_ceilings(*runtime, o->remeasure);
              if (o->json) {
                nlohmann::json j = {{"backend", to_string(d.backend)},
                                    {"name", d.name},
                                    {"id", d.id},
                                    {"arch", d.arch},
                                    {"multiprocessors", d.multiprocessors},
                                    {"memory_bytes", d.memory_bytes},
                                    {"l2_bytes", d.l2_bytes},
                                    {"shared_memory_per_block", d.shared_memory_per_block},
                                    {"driver", d.driver},
                                    {"ceilings", c},
                                    {"ceilings_cached", cached}};
                std::cout << j.dump(2) << "\n";
                return 0;
              }
              std::cout << std::left << std::fixed;
              auto row = [](const std::string& k, const std::string& v) {
                std::cout << "  " << std::setw(22) << k << v << "\n";
              };
              std::cout << d.name << " (" << to_string(d.backend) << ")\n";
              row("architecture", d.arch);
              row(d.backend == Backend::Cuda ? "multiprocessors" : "hardware threads",
                  std::to_string(d.multiprocessors));
              row("memory", gib(d.memory_bytes));
              row(d.backend == Backend::Cuda ? "L2 cache" : "last-level cache", mib(d.l2_bytes));
              if (d.shared_memory_per_block)
                row("shared memory/block", std::to_string(d.shared_memory_per_block / 1024) + " KiB");
              row("driver", d.driver);
              std::ostringstream copy, matrix;
              copy << std::fixed << std::setprecision(0) << c.copy_gbps << " GB/s (read + write)";
              matrix << std::fixed << std::setprecision(1) << c.matrix_tflops << " TFLOP/s (" << c.matrix_how
                     << ")";
              row("copy bandwidth", copy.str());
              row("matrix rate", c.matrix_tflops > 0 ? matrix.str() : c.matrix_how);
              row("measured", c.measured_at + (cached ? " (cached; --remeasure to measure again)" : ""));
              return 0;
            };
          }};
}

}  // namespace ak::cli
