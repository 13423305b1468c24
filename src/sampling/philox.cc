#include "sampling/philox.h"

namespace kiln {

PhiloxBlock Philox4x32(PhiloxBlock c, std::array<uint32_t, 2> k) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;  // round multipliers
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;  // Weyl key increments
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kM0} * c[0];
    const uint64_t p1 = uint64_t{kM1} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

double PhiloxUniform(uint64_t seed, uint64_t stream, uint64_t index) {
  const PhiloxBlock r =
      Philox4x32({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                  static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                 {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  const uint64_t bits = ((uint64_t{r[0]} << 32) | r[1]) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

}  // namespace kiln
