#include "formats/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "util/error.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little,
              "the safetensors reader assumes a little-endian host");

namespace {

using nlohmann::json;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

template <typename... Args>
[[noreturn]] void Fail(const std::string& path, const Args&... args) {
  throw Error(StrCat(path, ": ", args...));
}

// Headers and indexes nest 3 levels; copying or printing a JSON value recurses once per level,
// so a deeper document could overflow the stack.
constexpr int kMaxJsonDepth = 64;

// Parses `text` as JSON, rejecting duplicate object keys (nlohmann would silently keep the
// last one, which lets two entries alias) and nesting deeper than kMaxJsonDepth. Throws
// kiln::Error("<path>: ...").
json ParseJsonStrict(std::string_view text, const std::string& path, const char* what) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::optional<std::string> duplicate;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth >= kMaxJsonDepth) {
      throw Error(StrCat(path, ": JSON ", what, " nested deeper than ", kMaxJsonDepth, " levels"));
    }
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string()) {
          const std::string& k = parsed.get_ref<const std::string&>();
          if (!keys.back().insert(k).second && !duplicate) duplicate = k;
        }
        break;
      default:
        break;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    throw Error(StrCat(path, ": invalid JSON ", what, ": ", e.what()));
  }
  if (duplicate) {
    throw Error(StrCat(path, ": duplicate key ", Quote(*duplicate), " in JSON ", what));
  }
  return j;
}

struct StDType {
  std::string_view name;
  uint64_t size;
  std::optional<DType> dtype;  // nullopt: a valid safetensors dtype Kiln does not load
};

const StDType* FindStDType(std::string_view name) {
  static const StDType kTypes[] = {
      {"F32", 4, DType::kF32}, {"F16", 2, DType::kF16}, {"BF16", 2, DType::kBF16},
      {"F64", 8, {}},          {"I64", 8, {}},          {"U64", 8, {}},
      {"I32", 4, {}},          {"U32", 4, {}},          {"I16", 2, {}},
      {"U16", 2, {}},          {"I8", 1, {}},           {"U8", 1, {}},
      {"BOOL", 1, {}},         {"F8_E5M2", 1, {}},      {"F8_E4M3", 1, {}},
  };
  for (const StDType& t : kTypes) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

struct Entry {
  std::string name;
  uint64_t begin = 0;
  uint64_t end = 0;
};

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  const uint64_t size = file_.size();
  if (size < 8) {
    Fail(path, "truncated file: ", size,
         " bytes is too small for a safetensors header (8-byte length)");
  }
  uint64_t n = 0;
  std::memcpy(&n, file_.data(), 8);
  if (n > kSafetensorsMaxHeader) {
    Fail(path, "header length ", n, " exceeds the limit of ", kSafetensorsMaxHeader,
         " bytes (100 MiB)");
  }
  if (n > size - 8) {
    Fail(path, "header length ", n, " extends past end of file (size ", size, ", so at most ",
         size - 8, ")");
  }
  const std::string_view text(reinterpret_cast<const char*>(file_.data()) + 8,
                              static_cast<size_t>(n));
  json header = ParseJsonStrict(text, path, "header");
  if (!header.is_object())
    Fail(path, "JSON header is not an object (it is ", header.type_name(), ")");

  const uint64_t data_start = 8 + n;
  const uint64_t data_size = size - data_start;
  std::vector<Entry> entries;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) Fail(path, "__metadata__ must be an object of strings");
      for (auto& [k, v] : info.items()) {
        if (!v.is_string()) {
          Fail(path, "__metadata__ value for key ", Quote(k), " is not a string (it is ",
               v.type_name(), ")");
        }
        metadata_.emplace(k, v.get<std::string>());
      }
      continue;
    }
    const std::string tensor = Quote(name);
    if (!info.is_object()) Fail(path, "entry for tensor ", tensor, " must be an object");
    const json& entry = info;  // lambdas cannot capture structured bindings before clang 16
    auto field = [&](const char* key) -> const json& {
      auto it = entry.find(key);
      if (it == entry.end()) Fail(path, "tensor ", tensor, " is missing '", key, "'");
      return *it;
    };
    const json& jdtype = field("dtype");
    if (!jdtype.is_string()) Fail(path, "dtype of tensor ", tensor, " must be a string");
    const std::string& dtype_name = jdtype.get_ref<const std::string&>();
    const StDType* st = FindStDType(dtype_name);
    if (st == nullptr) {
      Fail(path, "unsupported dtype ", Quote(dtype_name), " for tensor ", tensor,
           " (Kiln loads F32, F16 and BF16)");
    }

    const json& jshape = field("shape");
    if (!jshape.is_array())
      Fail(path, "shape of tensor ", tensor, " must be an array of non-negative integers");
    TensorView t;
    t.name = name;
    t.dtype = st->dtype.value_or(DType::kF32);
    uint64_t numel = 1;
    bool overflow = false;
    for (const json& d : jshape) {
      if (!d.is_number_unsigned()) {
        Fail(path, "shape of tensor ", tensor, " must be an array of non-negative integers (found ",
             d.dump(), ")");
      }
      const uint64_t dim = d.get<uint64_t>();
      if (__builtin_mul_overflow(numel, dim, &numel)) overflow = true;
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    uint64_t nbytes = 0;
    if (overflow || numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(numel, st->size, &nbytes)) {
      Fail(path, "shape ", jshape.dump(), " of tensor ", tensor,
           " overflows (element count or size)");
    }

    const json& joff = field("data_offsets");
    if (!joff.is_array() || joff.size() != 2 || !joff[0].is_number_unsigned() ||
        !joff[1].is_number_unsigned()) {
      Fail(path, "data_offsets of tensor ", tensor,
           " must be an array of two non-negative integers [begin, end] (found ", joff.dump(), ")");
    }
    const uint64_t begin = joff[0].get<uint64_t>();
    const uint64_t end = joff[1].get<uint64_t>();
    if (begin > end) {
      Fail(path, "data_offsets [", begin, ", ", end, "] of tensor ", tensor,
           " are reversed (begin > end)");
    }
    if (end > data_size) {
      Fail(path, "data_offsets [", begin, ", ", end, "] of tensor ", tensor,
           " extend past the data section (", data_size, " bytes from offset ", data_start,
           ", file size ", size, ")");
    }
    if (end - begin != nbytes) {
      Fail(path, "data_offsets [", begin, ", ", end, "] of tensor ", tensor, " span ", end - begin,
           " bytes, which does not match shape ", jshape.dump(), " x ", dtype_name, " = ", nbytes,
           " bytes");
    }
    t.nbytes = nbytes;
    t.data = file_.data() + data_start + begin;
    entries.push_back({name, begin, end});
    // A valid type Kiln computes nothing with (the int64 position_ids buffer transformers'
    // BERT checkpoints carry): checked like the others, then left out, so Find() reports it
    // absent and a model that needs it fails naming it.
    if (!st->dtype) {
      skipped_.push_back(name + " (" + dtype_name + ")");
      continue;
    }
    tensors_.emplace(name, std::move(t));
  }

  // As the safetensors spec requires: the tensors tile the data section exactly, no overlaps,
  // no holes, nothing after the last one.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t covered = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.begin < covered) {
      const Entry& prev = entries[i - 1];
      Fail(path, "tensors ", Quote(prev.name), " [", prev.begin, ", ", prev.end, ") and ",
           Quote(e.name), " [", e.begin, ", ", e.end, ") overlap");
    }
    if (e.begin > covered) {
      Fail(path, "data section bytes [", covered, ", ", e.begin,
           ") are not covered by any tensor (holes are not allowed)");
    }
    covered = e.end;
  }
  if (covered != data_size) {
    Fail(path, "data section bytes [", covered, ", ", data_size,
         ") after the last tensor are not covered by any tensor");
  }
}

const TensorView* SafetensorsFile::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::Names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, t] : tensors_) names.push_back(name);
  return names;
}

namespace {

bool IsPlainFileName(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\\') == std::string::npos && s.find('\0') == std::string::npos;
}

}  // namespace

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& dir) : dir_(dir) {
  namespace fs = std::filesystem;
  const fs::path base(dir);
  const std::string index_path = (base / "model.safetensors.index.json").string();
  const std::string single_path = (base / "model.safetensors").string();
  std::error_code ec;
  if (fs::exists(index_path, ec)) {
    MappedFile index_file(index_path);
    if (index_file.size() > kSafetensorsMaxHeader) {
      Fail(index_path, "index is ", index_file.size(), " bytes, over the limit of ",
           kSafetensorsMaxHeader);
    }
    const std::string_view text(reinterpret_cast<const char*>(index_file.data()),
                                index_file.size());
    json index = ParseJsonStrict(text, index_path, "index");
    if (!index.is_object()) Fail(index_path, "index is not a JSON object");
    auto wm = index.find("weight_map");
    if (wm == index.end() || !wm->is_object()) {
      Fail(index_path, "index has no 'weight_map' object mapping tensor names to shard files");
    }
    std::map<std::string, SafetensorsFile*> shards;
    for (auto& [tensor, shard] : wm->items()) {
      if (!shard.is_string()) {
        Fail(index_path, "weight_map entry for tensor ", Quote(tensor),
             " is not a string (shard file name)");
      }
      const std::string& file = shard.get_ref<const std::string&>();
      if (!IsPlainFileName(file)) {
        Fail(index_path, "weight_map puts tensor ", Quote(tensor), " in ", Quote(file),
             ", which is not a plain file name inside the checkpoint directory");
      }
      if (shards.count(file) == 0) {
        const std::string shard_path = (base / file).string();
        if (!fs::is_regular_file(shard_path, ec)) {
          Fail(index_path, "shard ", Quote(file), " (listed for tensor ", Quote(tensor),
               ") does not exist: ", shard_path);
        }
        shards_.push_back(std::make_unique<SafetensorsFile>(shard_path));
        shards[file] = shards_.back().get();
      }
      const TensorView* view = shards[file]->Find(tensor);
      const std::vector<std::string>& skipped = shards[file]->skipped();
      const std::string prefix = tensor + " (";  // clang 14 lambdas cannot capture bindings
      if (view == nullptr && std::any_of(skipped.begin(), skipped.end(), [&](const std::string& s) {
            return s.rfind(prefix, 0) == 0;
          })) {
        continue;  // there, of a type Kiln does not load (see SafetensorsFile::skipped)
      }
      if (view == nullptr) {
        Fail(index_path, "weight_map puts tensor ", Quote(tensor), " in shard ", Quote(file),
             ", which does not contain it");
      }
      index_[tensor] = view;
    }
    return;
  }
  if (fs::exists(single_path, ec)) {
    shards_.push_back(std::make_unique<SafetensorsFile>(single_path));
    for (const std::string& name : shards_.back()->Names()) {
      index_[name] = shards_.back()->Find(name);
    }
    return;
  }
  throw Error(StrCat("no model.safetensors or model.safetensors.index.json in ", dir));
}

const TensorView* SafetensorsCheckpoint::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsCheckpoint::Names() const {
  std::vector<std::string> names;
  names.reserve(index_.size());
  for (const auto& [name, view] : index_) names.push_back(name);
  return names;
}

}  // namespace kiln
