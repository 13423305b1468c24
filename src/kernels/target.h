// The SIMD target the kernels dispatch to, by name, and pinning it: `kiln export --target`
// packs weights for a target other than the CPU's best, and a Kiln artifact runs on the target
// its panels were packed for (the panel layout differs between AVX2's 8-row and AVX-512's
// 16-row kernels; kernels::PackMatrix).
//
// Names: "scalar", "avx2", "avx512" (AVX-512 F/BW/DQ/VL), "avx512-vnni" (Ice Lake, Zen 4:
// adds VNNI, VBMI2, BITALG), "amx" (the avx512-vnni layout on a CPU with AMX tiles, which its
// bf16 and int8 kernels then use).
#pragma once

#include <string>
#include <vector>

namespace kiln::kernels {

// Every name above, weakest first.
std::vector<std::string> TargetNames();

// The target MatMul runs on now (after any UseTarget), e.g. "avx512-vnni"; "amx" when that
// target is active and the CPU has AMX tiles.
std::string ActiveTarget();

// The best target this CPU runs (ignoring UseTarget).
std::string NativeTarget();

// Empty when this CPU can run `name`, else why not ("this CPU has no AVX-512 VNNI (it runs
// avx2)"), or that the name is unknown.
std::string TargetUnsupportedReason(const std::string& name);

// Restricts dispatch to `name` (and weaker targets, which it never picks) for the rest of the
// process; throws kiln::Error when the CPU cannot run it. "amx" and "avx512-vnni" pin the same
// Highway target.
void UseTarget(const std::string& name);

}  // namespace kiln::kernels
