// For the cheat battery: system calls made without naming any function the lint knows, the way
// a kernel that hides from source patterns would (the instruction as raw bytes, numbers for
// the calls). x86-64 Linux only; the battery skips these kernels elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cheat {

inline long raw6(long number, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  long result;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile(".byte 0x0f, 0x05"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return result;
}

// x86-64 numbers.
enum : long {
  kRead = 0,
  kWrite = 1,
  kClose = 3,
  kFstat = 5,
  kClone = 56,
  kFork = 57,
  kExit = 60,
  kKill = 62,
  kPtrace = 101,
  kGetppid = 110,
  kOpenat = 257,
  kProcessVmWritev = 311,
  kExitGroup = 231,
};
constexpr long kAtCwd = -100;
constexpr long kReadOnly = 0, kWriteOnly = 1;

inline long parent() {
  return raw6(kGetppid);
}

// "/proc/<pid>/<leaf>" without the text "/proc/self" or any path literal the lint could match.
inline void proc_path(char* out, long pid, const char* leaf) {
  const char head[] = {'/', 'p', 'r', 'o', 'c', '/', 0};
  int n = 0;
  for (const char* p = head; *p;) out[n++] = *p++;
  char digits[24];
  int d = 0;
  do digits[d++] = static_cast<char>('0' + pid % 10);
  while ((pid /= 10) > 0);
  while (d) out[n++] = digits[--d];
  out[n++] = '/';
  while (*leaf) out[n++] = *leaf++;
  out[n] = 0;
}

inline void write_text(long fd, const char* text) {
  size_t n = 0;
  while (text[n]) ++n;
  raw6(kWrite, fd, reinterpret_cast<long>(text), static_cast<long>(n));
}

}  // namespace cheat
