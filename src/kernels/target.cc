#include "kernels/target.h"

#include "kernels/hwy_config.h"
// hwy_config.h first: every kernels TU agrees on the compiled targets.
#include <hwy/targets.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "util/error.h"

namespace kiln::kernels {
namespace {

struct NamedTarget {
  const char* name;
  int64_t hwy;           // Highway's target bit(s)
  const char* features;  // for messages
};

// Weakest first.
constexpr NamedTarget kTargets[] = {
    {"scalar", HWY_EMU128 | HWY_SCALAR, "no SIMD"},
    {"avx2", HWY_AVX2, "AVX2 and FMA"},
    {"avx512", HWY_AVX3, "AVX-512 F/BW/DQ/VL"},
    {"avx512-vnni", HWY_AVX3_DL, "AVX-512 VNNI, VBMI2 and BITALG"},
    {"amx", HWY_AVX3_DL, "AMX tiles (AMX-TILE, AMX-INT8, AMX-BF16)"},
};

constexpr int64_t kCompiled = HWY_TARGETS | HWY_EMU128 | HWY_SCALAR;

const NamedTarget* Find(const std::string& name) {
  for (const NamedTarget& t : kTargets) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

// AMX-TILE, AMX-INT8 and AMX-BF16 (cpuid leaf 7 EDX bits 24, 25, 22).
bool CpuHasAmx() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  constexpr unsigned kBits = (1u << 24) | (1u << 25) | (1u << 22);
  return (edx & kBits) == kBits;
#else
  return false;
#endif
}

// The CPU's targets, before any UseTarget (hwy's SupportedTargets reflects DisableTargets).
int64_t CpuTargets() {
  static const int64_t targets = hwy::SupportedTargets() & kCompiled;
  return targets;
}

// Highway's best target among `targets` is the lowest set bit.
int64_t Best(int64_t targets) { return targets & -targets; }

std::string NameOf(int64_t hwy_target) {
  for (const NamedTarget& t : kTargets) {
    if ((t.hwy & hwy_target) != 0) return t.name;
  }
  return hwy::TargetName(hwy_target);
}

std::string WithAmx(const std::string& name) {
  return name == "avx512-vnni" && CpuHasAmx() ? "amx" : name;
}

}  // namespace

std::vector<std::string> TargetNames() {
  std::vector<std::string> out;
  for (const NamedTarget& t : kTargets) out.push_back(t.name);
  return out;
}

std::string ActiveTarget() { return WithAmx(NameOf(Best(hwy::SupportedTargets() & kCompiled))); }

std::string NativeTarget() { return WithAmx(NameOf(Best(CpuTargets()))); }

std::string TargetUnsupportedReason(const std::string& name) {
  const NamedTarget* t = Find(name);
  if (t == nullptr) {
    std::string known;
    for (const std::string& n : TargetNames()) known += (known.empty() ? "" : ", ") + n;
    return StrCat("unknown target '", name, "' (known: ", known, ")");
  }
  if ((CpuTargets() & t->hwy) == 0 || (name == "amx" && !CpuHasAmx())) {
    return StrCat("this CPU has no ", t->features, " (its best target is ", NativeTarget(), ")");
  }
  return "";
}

void UseTarget(const std::string& name) {
  const std::string why = TargetUnsupportedReason(name);
  KILN_CHECK(why.empty(), "target ", name, ": ", why);
  // Every target better than the wanted one (a lower bit) is disabled.
  const int64_t bit = Best(Find(name)->hwy);
  hwy::DisableTargets(CpuTargets() & (bit - 1));
}

}  // namespace kiln::kernels
