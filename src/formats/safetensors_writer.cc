#include "formats/safetensors_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "util/error.h"

namespace kiln {
namespace {

uint64_t ElementSize(std::string_view dtype) {
  static const std::pair<std::string_view, uint64_t> kSizes[] = {
      {"F64", 8}, {"I64", 8}, {"U64", 8},  {"F32", 4},     {"I32", 4},
      {"U32", 4}, {"F16", 2}, {"BF16", 2}, {"I16", 2},     {"U16", 2},
      {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
  };
  for (const auto& [name, size] : kSizes) {
    if (name == dtype) return size;
  }
  return 0;
}

const char* SafetensorsName(DType t) {
  switch (t) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    default:
      return nullptr;
  }
}

}  // namespace

void SafetensorsWriter::SetMetadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

void SafetensorsWriter::AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                                  const void* data, size_t nbytes) {
  const char* st = SafetensorsName(dtype);
  KILN_CHECK(st != nullptr, "SafetensorsWriter: tensor '", name, "': dtype ",
             GetDTypeInfo(dtype).name, " has no safetensors equivalent");
  AddTensor(name, std::string(st), std::move(shape), data, nbytes);
}

void SafetensorsWriter::AddTensor(const std::string& name, const std::string& dtype,
                                  std::vector<int64_t> shape, const void* data, size_t nbytes) {
  KILN_CHECK(name != "__metadata__", "SafetensorsWriter: '__metadata__' is not a tensor name");
  for (const Tensor& t : tensors_) {
    KILN_CHECK(t.name != name, "SafetensorsWriter: duplicate tensor name '", name, "'");
  }
  const uint64_t elem = ElementSize(dtype);
  KILN_CHECK(elem != 0, "SafetensorsWriter: tensor '", name, "': unknown dtype '", dtype, "'");
  uint64_t numel = 1;
  for (int64_t d : shape) {
    KILN_CHECK(d >= 0, "SafetensorsWriter: tensor '", name, "' has a negative dimension");
    KILN_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel),
               "SafetensorsWriter: tensor '", name, "' element count overflows");
  }
  uint64_t want = 0;
  KILN_CHECK(!__builtin_mul_overflow(numel, elem, &want) && want == nbytes,
             "SafetensorsWriter: tensor '", name, "' has ", nbytes, " bytes of data, its shape",
             " and dtype need ", want);
  const auto* b = static_cast<const uint8_t*>(data);
  tensors_.push_back({name, dtype, elem, std::move(shape), std::vector<uint8_t>(b, b + nbytes)});
}

void SafetensorsWriter::AddTensorF32(const std::string& name, std::vector<int64_t> shape,
                                     const std::vector<float>& values) {
  AddTensor(name, DType::kF32, std::move(shape), values.data(), values.size() * sizeof(float));
}

std::vector<const SafetensorsWriter::Tensor*> SafetensorsWriter::Ordered() const {
  std::vector<const Tensor*> order;
  for (const Tensor& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const Tensor* a, const Tensor* b) {
    if (a->elem_size != b->elem_size) return a->elem_size > b->elem_size;
    return a->name < b->name;
  });
  return order;
}

std::string SafetensorsWriter::Header() const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const Tensor* t : Ordered()) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = t->dtype;
    entry["shape"] = t->shape;
    entry["data_offsets"] = {offset, offset + t->data.size()};
    offset += t->data.size();
    header[t->name] = std::move(entry);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

std::vector<uint8_t> SafetensorsWriter::Serialize() const {
  const std::string header = Header();
  const std::vector<const Tensor*> order = Ordered();
  size_t total = 8 + header.size();
  for (const Tensor* t : order) total += t->data.size();
  std::vector<uint8_t> out(total);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  size_t pos = 8 + header.size();
  for (const Tensor* t : order) {
    if (!t->data.empty()) std::memcpy(out.data() + pos, t->data.data(), t->data.size());
    pos += t->data.size();
  }
  return out;
}

void SafetensorsWriter::Write(const std::string& path) const {
  const std::string header = Header();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  KILN_CHECK(f != nullptr, path, ": cannot create: ", std::strerror(errno));
  bool ok = true;
  auto put = [&](const void* p, size_t n) {
    if (ok && n > 0 && std::fwrite(p, 1, n, f) != n) ok = false;
  };
  const uint64_t n = header.size();
  put(&n, 8);
  put(header.data(), header.size());
  for (const Tensor* t : Ordered()) put(t->data.data(), t->data.size());
  const int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
  }
  KILN_CHECK(ok, path, ": write failed: ", std::strerror(err != 0 ? err : errno));
}

}  // namespace kiln
