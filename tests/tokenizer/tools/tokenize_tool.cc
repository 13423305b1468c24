// Developer tool for the tokenizer golden tests: loads a tokenizer (GGUF vocabulary,
// tokenizer.json or a model directory, via LoadTokenizer) and answers JSON lines.
//
//   kiln_tokenize_tool MODEL.gguf|tokenizer.json|DIR   (requests on stdin, one JSON per line)
//     {"text": "...", "add_special": true, "parse_special": false}  -> {"ids": [...]}
//     {"text_hex": "68c3", ...}          same, text given as hex bytes (for invalid UTF-8)
//     {"ids": [...], "skip_special": true}  -> {"text": "...", "hex": "..."} (Decode)
//     {"pieces": [...]}                     -> {"pieces_hex": ["..", ...]} (TokenPiece)
//     {"info": true}                        -> vocabulary size, bos/eos, stop ids, ...
//     {"words": "..."} (or "words_hex")     -> {"ids", "word_ids", "begin", "end"} (EncodeWords;
//                                              byte offsets of each token's word)
//     {"layout": true}                      -> the SpecialLayout ({"single_before": [[id, type]
//                                              ...], ..., "single_type", "type_a", "type_b"})
//     {"single": "a"} / {"pair": ["a", "b"]} -> {"ids", "type_ids"} (Encode(text, false) of each
//                                              part, then AssembleSingle / AssemblePair)
//   kiln_tokenize_tool MODEL --bench FILE [REPEAT [CHUNK]]   encode and decode FILE (in
//     documents of at most CHUNK bytes cut at newlines), print MB/s
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/load_tokenizer.h"
#include "tokenizer/pair_encoding.h"

namespace {

std::string ToHex(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string FromHex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  }
  return out;
}

nlohmann::json RunJson(const std::vector<kiln::LayoutToken>& run) {
  nlohmann::json out = nlohmann::json::array();
  for (const kiln::LayoutToken& t : run) out.push_back({t.id, t.type_id});
  return out;
}

nlohmann::json LayoutJson(const kiln::SpecialLayout& l) {
  return nlohmann::json{{"single_before", RunJson(l.single_before)},
                        {"single_after", RunJson(l.single_after)},
                        {"pair_before", RunJson(l.pair_before)},
                        {"pair_middle", RunJson(l.pair_middle)},
                        {"pair_after", RunJson(l.pair_after)},
                        {"single_type", l.single_type},
                        {"type_a", l.type_a},
                        {"type_b", l.type_b}};
}

nlohmann::json Handle(const kiln::Tokenizer& tok, const nlohmann::json& req) {
  using nlohmann::json;
  if (req.contains("words") || req.contains("words_hex")) {
    const std::string text =
        req.contains("words") ? req["words"].get<std::string>() : FromHex(req["words_hex"]);
    json ids = json::array(), words = json::array(), begin = json::array(), end = json::array();
    for (const kiln::WordSpan& w : tok.EncodeWords(text)) {
      ids.push_back(w.id);
      words.push_back(w.word);
      begin.push_back(w.begin);
      end.push_back(w.end);
    }
    return json{{"ids", ids}, {"word_ids", words}, {"begin", begin}, {"end", end}};
  }
  if (req.contains("layout")) return LayoutJson(tok.Layout());
  if (req.contains("single") || req.contains("pair")) {
    const kiln::SpecialLayout layout = tok.Layout();
    kiln::EncodedInput in;
    if (req.contains("single")) {
      in = kiln::AssembleSingle(layout, tok.Encode(req["single"].get<std::string>(), false));
    } else {
      const auto& p = req["pair"];
      in = kiln::AssemblePair(layout, tok.Encode(p.at(0).get<std::string>(), false),
                              tok.Encode(p.at(1).get<std::string>(), false));
    }
    return json{{"ids", in.ids}, {"type_ids", in.type_ids}};
  }
  if (req.contains("text") || req.contains("text_hex")) {
    const std::string text =
        req.contains("text") ? req["text"].get<std::string>() : FromHex(req["text_hex"]);
    const auto ids =
        tok.Encode(text, req.value("add_special", false), req.value("parse_special", false));
    return json{{"ids", ids}};
  }
  if (req.contains("ids")) {
    const auto ids = req["ids"].get<std::vector<int32_t>>();
    const std::string text = tok.Decode(ids, req.value("skip_special", true));
    return json{{"text", text}, {"hex", ToHex(text)}};
  }
  if (req.contains("pieces")) {
    json out = json::array();
    for (int32_t id : req["pieces"].get<std::vector<int32_t>>()) {
      out.push_back(ToHex(tok.TokenPiece(id)));
    }
    return json{{"pieces_hex", out}};
  }
  if (req.contains("info")) {
    return json{
        {"vocab_size", tok.vocab_size()}, {"bos", tok.bos_id()},       {"eos", tok.eos_id()},
        {"adds_bos", tok.AddsBos()},      {"adds_eos", tok.AddsEos()}, {"stop_ids", tok.StopIds()}};
  }
  return json{{"error", "unknown request"}};
}

// Cuts `text` into documents of at most `chunk` bytes at newlines (one piece when chunk is 0),
// as bench/tokenizer_bench.py does for the reference.
std::vector<std::string_view> Chunks(std::string_view text, size_t chunk) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t n = text.size();
    if (chunk > 0 && n > chunk) {
      const size_t nl = text.rfind('\n', chunk - 1);
      n = nl == std::string_view::npos ? chunk : nl + 1;
    }
    out.push_back(text.substr(0, n));
    text.remove_prefix(n);
  }
  return out;
}

// Encodes then decodes every chunk `repeat` times; prints MB/s of each.
void RunBench(const kiln::Tokenizer& tok, const std::string& text, int repeat, size_t chunk) {
  using Clock = std::chrono::steady_clock;
  const auto docs = Chunks(text, chunk);
  std::vector<std::vector<int32_t>> ids(docs.size());
  size_t n_ids = 0, n_out = 0;
  const auto t0 = Clock::now();
  for (int r = 0; r < repeat; ++r) {
    n_ids = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
      ids[i] = tok.Encode(docs[i], false, false);
      n_ids += ids[i].size();
    }
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count() / repeat;
  const auto t1 = Clock::now();
  for (int r = 0; r < repeat; ++r) {
    n_out = 0;
    for (const auto& d : ids) n_out += tok.Decode(d, false).size();
  }
  const double d = std::chrono::duration<double>(Clock::now() - t1).count() / repeat;
  std::printf("%zu bytes -> %zu tokens in %.4f s: %.2f MB/s\n", text.size(), n_ids, s,
              text.size() / s / 1e6);
  std::printf("decode %zu tokens -> %zu bytes in %.4f s: %.2f MB/s\n", n_ids, n_out, d,
              n_out / d / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s MODEL.gguf|tokenizer.json|DIR [--bench FILE [REPEAT [CHUNK]]]\n",
                 argv[0]);
    return 2;
  }
  try {
    auto tok = kiln::LoadTokenizer(argv[1]);
    if (argc >= 4 && std::string(argv[2]) == "--bench") {
      std::ifstream in(argv[3], std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      const int repeat = argc >= 5 ? std::stoi(argv[4]) : 5;
      const size_t chunk = argc >= 6 ? std::stoul(argv[5]) : 0;
      RunBench(*tok, ss.str(), repeat, chunk);
      return 0;
    }
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line.empty()) continue;
      nlohmann::json resp;
      try {
        resp = Handle(*tok, nlohmann::json::parse(line));
      } catch (const std::exception& e) {
        resp = nlohmann::json{{"error", e.what()}};
      }
      std::cout << resp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n'
                << std::flush;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
