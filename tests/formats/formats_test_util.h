// Helpers shared by the formats tests: temp dirs, byte patching, a GGUF field locator.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/error.h"

namespace kiln::testing_util {

using Bytes = std::vector<uint8_t>;

// A fresh directory, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "kiln_formats_" + std::to_string(::getpid()) + "_" +
                       std::to_string(counter++) + "_" + (info ? info->name() : "x");
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void WriteBytes(const std::string& path, const Bytes& bytes) {
  // Replace rather than truncate: truncating a non-empty file makes ext4 flush it (slow).
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(out.good()) << path;
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void WriteText(const std::string& path, const std::string& text) {
  WriteBytes(path, Bytes(text.begin(), text.end()));
}

inline Bytes ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <typename T>
void Poke(Bytes& b, size_t pos, T v) {
  if (pos + sizeof(T) > b.size()) throw std::out_of_range("Poke past end");
  std::memcpy(b.data() + pos, &v, sizeof(T));
}

template <typename T>
T Peek(const Bytes& b, size_t pos) {
  if (pos + sizeof(T) > b.size()) throw std::out_of_range("Peek past end");
  T v;
  std::memcpy(&v, b.data() + pos, sizeof(T));
  return v;
}

inline Bytes Prefix(const Bytes& b, size_t n) { return Bytes(b.begin(), b.begin() + n); }

// Little-endian byte builder for hand-made files.
struct ByteBuilder {
  Bytes b;
  ByteBuilder& Raw(const std::string& s) {
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  template <typename T>
  ByteBuilder& Put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  ByteBuilder& U32(uint32_t v) { return Put(v); }
  ByteBuilder& U64(uint64_t v) { return Put(v); }
  ByteBuilder& Str(const std::string& s) {
    U64(s.size());
    return Raw(s);
  }
};

// Where each field of a (valid) GGUF file lies, so tests can corrupt exactly one.
struct GgufKvPos {
  std::string key;
  size_t key_pos;    // the u64 key length
  size_t type_pos;   // the u32 value type
  size_t value_pos;  // the value (for arrays: the u32 element type)
  size_t end_pos;
};
struct GgufTensorPos {
  std::string name;
  size_t name_pos;  // the u64 name length
  size_t ndims_pos;
  size_t ne_pos;
  size_t type_pos;
  size_t offset_pos;
};
struct GgufLayout {
  std::vector<GgufKvPos> kvs;
  std::vector<GgufTensorPos> tensors;
  size_t infos_end = 0;
  const GgufKvPos& Kv(const std::string& key) const {
    for (const auto& k : kvs) {
      if (k.key == key) return k;
    }
    throw std::out_of_range("no kv " + key);
  }
  const GgufTensorPos& Tensor(const std::string& name) const {
    for (const auto& t : tensors) {
      if (t.name == name) return t;
    }
    throw std::out_of_range("no tensor " + name);
  }
};

class GgufLocator {
 public:
  explicit GgufLocator(const Bytes& b) : b_(b) {}
  GgufLayout Run() {
    GgufLayout l;
    pos_ = 8;
    const uint64_t n_tensors = Get<uint64_t>();
    const uint64_t n_kv = Get<uint64_t>();
    for (uint64_t i = 0; i < n_kv; ++i) {
      GgufKvPos k;
      k.key_pos = pos_;
      k.key = GetStr();
      k.type_pos = pos_;
      const uint32_t type = Get<uint32_t>();
      k.value_pos = pos_;
      SkipValue(type);
      k.end_pos = pos_;
      l.kvs.push_back(k);
    }
    for (uint64_t i = 0; i < n_tensors; ++i) {
      GgufTensorPos t;
      t.name_pos = pos_;
      t.name = GetStr();
      t.ndims_pos = pos_;
      const uint32_t nd = Get<uint32_t>();
      t.ne_pos = pos_;
      pos_ += 8 * nd;
      t.type_pos = pos_;
      pos_ += 4;
      t.offset_pos = pos_;
      pos_ += 8;
      l.tensors.push_back(t);
    }
    l.infos_end = pos_;
    return l;
  }

 private:
  template <typename T>
  T Get() {
    T v = Peek<T>(b_, pos_);
    pos_ += sizeof(T);
    return v;
  }
  std::string GetStr() {
    const uint64_t n = Get<uint64_t>();
    if (pos_ + n > b_.size()) throw std::out_of_range("string past end");
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void SkipValue(uint32_t type) {
    static const int kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      GetStr();
    } else if (type == 9) {
      const uint32_t et = Get<uint32_t>();
      const uint64_t n = Get<uint64_t>();
      for (uint64_t i = 0; i < n; ++i) SkipValue(et);
    } else if (type < 13) {
      pos_ += kSizes[type];
    } else {
      throw std::out_of_range("bad type");
    }
  }
  const Bytes& b_;
  size_t pos_ = 0;
};

inline GgufLayout LocateGguf(const Bytes& b) { return GgufLocator(b).Run(); }

// Runs `fn`, which must throw kiln::Error whose message contains `path` and `phrase`.
inline void ExpectKilnError(const std::function<void()>& fn, const std::string& path,
                            const std::string& phrase) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos)
        << "message lacks the path '" << path << "': " << msg;
    EXPECT_NE(msg.find(phrase), std::string::npos) << "message lacks '" << phrase << "': " << msg;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-kiln exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "did not throw (expected '" << phrase << "')";
}

// Deterministic pseudo-random bytes.
inline Bytes PseudoRandomBytes(size_t n, uint32_t seed) {
  Bytes b(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& v : b) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v = static_cast<uint8_t>(x);
  }
  return b;
}

}  // namespace kiln::testing_util
