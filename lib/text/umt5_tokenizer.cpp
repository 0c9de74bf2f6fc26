#include "text/umt5_tokenizer.h"

#include <dlfcn.h>
#include <sentencepiece_processor.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "io/json_file.h"
#include "io/model_dir.h"
#include "io/safetensors.h"
#include "text/sentencepiece_library.h"
#include "text/tokenizer_json.h"

namespace omni::text {

namespace {

// The tokenizer needs one entry point by name: the processor's constructor.
struct Processor {
  SentencePieceLibrary library{{"libsentencepiece.so.0", "libsentencepiece.so"}, "the UMT5 tokenizer needs it"};
  void (*construct)(void* self) = nullptr;  // SentencePieceProcessor::SentencePieceProcessor()
};

const Processor& sentencepiece_library() {
  static const Processor lib = [] {
    Processor l;
    l.construct = reinterpret_cast<void (*)(void*)>(l.library.symbol("_ZN13sentencepiece22SentencePieceProcessorC1Ev"));
    return l;
  }();
  lib.library.check();
  OMNI_CHECK(lib.construct, "cannot load libsentencepiece (the UMT5 tokenizer needs it): no SentencePieceProcessor");
  return lib;
}

template <typename Call>
std::string status_error(Call&& call) {
  return sentencepiece_library().library.status_error(std::forward<Call>(call));
}

bool file_exists(const std::string& path, bool* is_dir = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  if (is_dir) *is_dir = S_ISDIR(st.st_mode);
  return true;
}

}  // namespace

// ---- tokenizer ---------------------------------------------------------------------------------------------

Umt5Tokenizer::Umt5Tokenizer(const std::string& spiece_path) : path_(spiece_path) {
  bool is_dir = false;
  OMNI_CHECK_INPUT(file_exists(spiece_path, &is_dir), spiece_path,
                   ": SentencePiece model not found (the tokenizer needs the checkpoint's tokenizer/spiece.model)");
  OMNI_CHECK_INPUT(!is_dir, spiece_path, ": expected a SentencePiece model file, found a directory");
  load_spiece(nullptr);
}

Umt5Tokenizer Umt5Tokenizer::of_model(const io::ModelDir& model) {
  const io::ModelComponent& c = model.component("tokenizer");
  if (c.spiece_file.empty()) return from_dir(model.component_dir("tokenizer"));
  const auto file = io::open_tensor_file(c.spiece_file);
  const io::TensorInfo& info = file->info("spiece_model");
  OMNI_CHECK_INPUT(info.dtype == io::DType::U8 || info.dtype == io::DType::I8, c.spiece_file,
                   ": tensor 'spiece_model' is ", io::dtype_name(info.dtype),
                   ", expected the bytes of a SentencePiece model (uint8)");
  const at::Tensor bytes = file->read("spiece_model", at::kByte).contiguous();  // [n]
  return from_spiece_bytes(std::string(reinterpret_cast<const char*>(bytes.data_ptr()), bytes.numel()),
                           c.spiece_file + " (tensor spiece_model)");
}

Umt5Tokenizer Umt5Tokenizer::from_spiece_bytes(const std::string& serialized, const std::string& source) {
  Umt5Tokenizer tok;
  tok.path_ = source;
  tok.load_spiece(&serialized);
  // T5Tokenizer's default extra_ids (100), as for a spiece.model folder without a tokenizer_config.json.
  tok.add_extra_ids(100);
  tok.sort_special();
  OMNI_INFO("tokenizer: the SentencePiece model carried in ", source, " (as transformers' T5Tokenizer)");
  return tok;
}

void Umt5Tokenizer::load_spiece(const std::string* serialized) {
  const std::string& spiece_path = path_;
  {
    // Constructed by the library; the virtual destructor (unique_ptr's delete) frees it again.
    void* memory = ::operator new(sizeof(sentencepiece::SentencePieceProcessor));
    try {
      sentencepiece_library().construct(memory);
    } catch (...) {
      ::operator delete(memory);
      throw;
    }
    sp_.reset(static_cast<sentencepiece::SentencePieceProcessor*>(memory));
  }
  const std::string load_error =
      status_error([&] { return serialized ? sp_->LoadFromSerializedProto(*serialized) : sp_->Load(spiece_path); });
  OMNI_CHECK_INPUT(load_error.empty(), spiece_path, ": cannot load the SentencePiece model: ", load_error);
  pad_id_ = sp_->pad_id();
  eos_id_ = sp_->eos_id();
  // T5's conventions; a model without them is not a T5 tokenizer and would silently produce wrong ids.
  OMNI_CHECK_INPUT(pad_id_ >= 0 && eos_id_ >= 0, spiece_path, ": the SentencePiece model defines no ",
                   pad_id_ < 0 ? "pad" : "eos", " piece (T5 tokenizers have pad 0 and eos 1)");
  for (int id = 0; id < sp_->GetPieceSize(); ++id) {
    if (sp_->IsControl(id) || sp_->IsUnknown(id)) {
      const std::string piece = sp_->IdToPiece(id);
      if (!piece.empty()) special_.emplace_back(piece, id);
    }
  }
  sort_special();
}

void Umt5Tokenizer::add_extra_ids(int64_t extra_ids) {
  // T5Tokenizer's <extra_id_0> .. <extra_id_{N-1}> come after the vocabulary, in reverse: <extra_id_i> is
  // piece_count + N - 1 - i.
  const int64_t pieces = sp_->GetPieceSize();
  for (int64_t i = 0; i < extra_ids; ++i)
    special_.emplace_back(str_cat("<extra_id_", i, ">"), pieces + extra_ids - 1 - i);
}

void Umt5Tokenizer::sort_special() {
  // Longest first: a special token is matched before any shorter one it contains.
  std::stable_sort(special_.begin(), special_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

namespace {

// A special token of tokenizer_config.json / special_tokens_map.json: a string, or an AddedToken object
// {"content": ..., "lstrip": ..., ...}; null when absent or null.
std::optional<std::string> token_content(io::ConfigFile& file, const std::string& key) {
  const nlohmann::json* v = file.find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_object()) {
    const auto it = v->find("content");
    OMNI_CHECK_INPUT(it != v->end() && it->is_string(), file.source(), ": '", key,
                     "' must be a token string or an object with a string 'content', found ", v->dump());
    return it->get<std::string>();
  }
  OMNI_CHECK_INPUT(v->is_string(), file.source(), ": '", key, "' must be a token string, found ", v->dump());
  return v->get<std::string>();
}

// A list of special tokens, or transformers 5's {"name": token} form of extra_special_tokens (4.48+ write {}).
std::vector<std::string> token_list(io::ConfigFile& file, const std::string& key) {
  std::vector<std::string> out;
  const nlohmann::json* v = file.find(key);
  if (v == nullptr) return out;
  OMNI_CHECK_INPUT(v->is_array() || v->is_object(), file.source(), ": '", key, "' must be a list of tokens, found ",
                   v->dump());
  for (const auto& e : *v) {
    if (e.is_object() && e.contains("content") && e["content"].is_string()) {
      out.push_back(e["content"].get<std::string>());
    } else {
      OMNI_CHECK_INPUT(e.is_string(), file.source(), ": '", key, "' must hold token strings, found ", e.dump());
      out.push_back(e.get<std::string>());
    }
  }
  return out;
}

// Keys of tokenizer_config.json that transformers stores or uses for decoding, padding sides, the model's
// length limit (the pipelines pass max_length) and loading: none changes the ids of an encoded prompt.
constexpr std::initializer_list<const char*> kTokenizerBookkeeping = {"model_max_length",
                                                                      "clean_up_tokenization_spaces",
                                                                      "padding_side",
                                                                      "truncation_side",
                                                                      "model_input_names",
                                                                      "name_or_path",
                                                                      "backend",
                                                                      "is_local",
                                                                      "local_files_only",
                                                                      "spaces_between_special_tokens",
                                                                      "use_fast",
                                                                      "processor_class",
                                                                      "auto_map",
                                                                      "tokenizer_file",
                                                                      "vocab_file",
                                                                      "add_prefix_space",
                                                                      "legacy"};

}  // namespace

namespace {

// tokenizer_config.json and special_tokens_map.json of a tokenizer folder, with the checks both tokenizers
// (tokenizer.json and spiece.model) share.
struct TokenizerFiles {
  std::string config_path, map_path;
  std::optional<io::ConfigFile> config, map;
  int64_t extra_ids = 100;  // T5Tokenizer's default

  explicit TokenizerFiles(const std::string& dir)
      : config_path(dir + "/tokenizer_config.json"), map_path(dir + "/special_tokens_map.json") {
    if (file_exists(config_path)) config.emplace(io::ConfigFile::read(config_path, "T5Tokenizer"));
    if (file_exists(map_path)) map.emplace(io::ConfigFile::read(map_path, "T5Tokenizer"));
    if (!config) return;
    const std::string cls = config->string_or("tokenizer_class", "T5Tokenizer");
    OMNI_CHECK_INPUT(cls == "T5Tokenizer" || cls == "T5TokenizerFast", config_path, ": tokenizer_class is '", cls,
                     "', expected T5Tokenizer or T5TokenizerFast (the UMT5 text encoder's tokenizer)");
    // transformers would hand these to SentencePiece (sampling, alpha, ...) or keep special tokens unsplit.
    if (const nlohmann::json* v = config->find("sp_model_kwargs")) {
      OMNI_CHECK_INPUT(v->is_object() && v->empty(), config_path, ": sp_model_kwargs ", v->dump(),
                       " is not supported (only {}: they change how SentencePiece encodes)");
    }
    OMNI_CHECK_INPUT(!config->bool_or("split_special_tokens", false), config_path,
                     ": split_special_tokens = true is not supported (special tokens in a prompt are matched whole)");
    config->known(kTokenizerBookkeeping);
    // transformers 5 writes its Unigram model's unk_id here (2, even for vocabularies whose <unk> is 3: issue
    // 20); the unknown piece we use is the tokenizer's own (tokenizer.json's unk_id, spiece.model's unk).
    config->int_or("unk_id", 0);
    extra_ids = config->int_or("extra_ids", 100);
    OMNI_CHECK_INPUT(extra_ids >= 0, config_path, ": 'extra_ids' must not be negative, found ", extra_ids);
  }

  // A named special token: tokenizer_config.json wins over special_tokens_map.json (transformers reads the
  // map for tokens the config leaves out). {token or none, the file that named it}.
  std::pair<std::optional<std::string>, std::string> named(const char* key) {
    // Both are read (and so checked): the map's value is validated even where the config's wins.
    std::optional<std::string> from_config = config ? token_content(*config, key) : std::nullopt;
    std::optional<std::string> from_map = map ? token_content(*map, key) : std::nullopt;
    if (from_config) return {from_config, config_path};
    return {from_map, map_path};
  }

  // The additional special tokens in transformers 5's order (after a new bos): transformers 5 writes
  // extra_special_tokens, 4.x additional_special_tokens; special_tokens_map.json's list is not read (checked
  // against transformers 5.17). {token, key}.
  std::vector<std::pair<std::string, const char*>> additional() {
    std::vector<std::pair<std::string, const char*>> out;
    if (!config) return out;
    for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
      const std::vector<std::string> tokens = token_list(*config, key);
      // T5Tokenizer: a list naming some <extra_id_N> must name all extra_ids of them; with fewer, transformers'
      // converted vocabulary keeps the others as ordinary Unigram pieces.
      int64_t listed = 0;
      for (const auto& token : tokens) listed += token.find("<extra_id_") != std::string::npos ? 1 : 0;
      OMNI_CHECK_INPUT(extra_ids == 0 || listed == 0 || listed == extra_ids, config_path, ": '", key, "' lists ",
                       listed, " <extra_id_N> tokens but extra_ids is ", extra_ids,
                       " (transformers requires all of them or none)");
      for (const auto& token : tokens) out.emplace_back(token, key);
    }
    return out;
  }

  // {"<id>": {"content": ...}, ...}: what the tokenizer that saved the folder had at each id; a different token
  // there would give other ids. `id_of` is the loaded tokenizer's (-1: not a token of it).
  void check_added_tokens_decoder(const std::function<int64_t(const std::string&)>& id_of,
                                  const char* what_is_supported) {
    const nlohmann::json* v = config ? config->find("added_tokens_decoder") : nullptr;
    if (v == nullptr) return;
    OMNI_CHECK_INPUT(v->is_object(), config_path, ": 'added_tokens_decoder' must be an object, found ", v->type_name());
    for (auto it = v->begin(); it != v->end(); ++it) {
      OMNI_CHECK_INPUT(it->is_object() && it->contains("content") && (*it)["content"].is_string(), config_path,
                       ": added_tokens_decoder['", it.key(), "'] must hold a string 'content', found ", it->dump());
      const std::string token = (*it)["content"].get<std::string>();
      const int64_t id = id_of(token);
      OMNI_CHECK_INPUT(std::to_string(id) == it.key(), config_path, ": added_tokens_decoder gives id ", it.key(),
                       " to '", token, "', but this tokenizer has it at ",
                       id < 0 ? std::string("no id") : std::to_string(id), " (", what_is_supported, ")");
    }
  }

  void finish() {
    if (map) {
      token_list(*map, "additional_special_tokens");  // validated only (see additional())
      map->warn_unknown();
    }
    if (config) config->warn_unknown();
  }
};

}  // namespace

Umt5Tokenizer Umt5Tokenizer::from_dir(const std::string& tokenizer_dir) {
  TokenizerFiles files(tokenizer_dir);
  const std::string json_path = tokenizer_dir + "/tokenizer.json";
  if (file_exists(json_path)) {
    // tokenizer.json rules, as in transformers' fast tokenizer; the special tokens the config files name must
    // be the ones it has.
    Umt5Tokenizer tok;
    tok.path_ = json_path;
    tok.json_ = std::make_unique<TokenizerJson>(json_path, TokenizerJson::Loader::kT5TokenizerFile, files.extra_ids);
    const TokenizerJson& tj = *tok.json_;
    tok.eos_id_ = tj.eos_id();  // the T5 loader requires "</s>"
    tok.pad_id_ = tj.pad_id();  // and adds "<pad>" when the file lacks it
    for (const char* key : {"eos_token", "unk_token"}) {
      const auto [token, source] = files.named(key);
      if (!token) continue;
      const bool eos = std::string(key) == "eos_token";
      const int64_t want = eos ? tok.eos_id_ : tj.unk_id();
      OMNI_CHECK_INPUT(tj.token_to_id(*token) == want, source, ": ", key, " '", *token, "' is not ", json_path, "'s ",
                       eos ? "eos '</s>'" : "unk token", " (id ", want, "); another one is not supported");
    }
    if (const auto [token, source] = files.named("pad_token"); token) {
      tok.pad_id_ = tj.token_to_id(*token);
      OMNI_CHECK_INPUT(tok.pad_id_ >= 0, source, ": pad_token '", *token, "' is not a token of ", json_path,
                       " (a new padding token is not supported)");
    }
    auto check_added = [&](const std::string& token, const std::string& source, const std::string& key) {
      OMNI_CHECK_INPUT(!token.empty(), source, ": '", key, "' is an empty token");
      OMNI_CHECK_INPUT(tj.is_added_token(token), source, ": ", key, " '", token, "' is not among ", json_path,
                       "'s added_tokens (adding tokens to a tokenizer.json is not supported)");
    };
    if (const auto [token, source] = files.named("bos_token"); token) check_added(*token, source, "bos_token");
    for (const auto& [token, key] : files.additional()) check_added(token, files.config_path, key);
    files.check_added_tokens_decoder([&](const std::string& t) { return tj.token_to_id(t); },
                                     "an added token outside tokenizer.json is not supported");
    files.finish();
    return tok;
  }

  Umt5Tokenizer tok(tokenizer_dir + "/spiece.model");
  const int64_t extra_ids = files.extra_ids;
  const int64_t pieces = tok.sp_->GetPieceSize();
  tok.add_extra_ids(extra_ids);

  // The id of a token the files name: a piece of the vocabulary, an extra id, or -1.
  auto id_of = [&](const std::string& token) -> int64_t {
    for (const auto& sp : tok.special_)
      if (sp.first == token) return sp.second;
    const int id = tok.sp_->PieceToId(token);
    return tok.sp_->IdToPiece(id) == token ? id : -1;
  };
  int64_t next_id = pieces + extra_ids;  // tokens new to the vocabulary are appended, as transformers adds them
  auto add_special = [&](const std::string& token, const std::string& source, const std::string& key) {
    OMNI_CHECK_INPUT(!token.empty(), source, ": '", key, "' is an empty token");
    for (const auto& sp : tok.special_)
      if (sp.first == token) return;  // a control piece, an extra id, or listed twice
    const int64_t id = id_of(token);
    tok.special_.emplace_back(token, id >= 0 ? id : next_id++);
  };

  // Those that set ids must be the SentencePiece model's own.
  for (const char* key : {"eos_token", "unk_token"}) {
    const auto [token, source] = files.named(key);
    if (!token) continue;
    const bool eos = std::string(key) == "eos_token";
    const int64_t want = eos ? tok.eos_id_ : tok.sp_->unk_id();
    OMNI_CHECK_INPUT(id_of(*token) == want, source, ": ", key, " '", *token, "' is not '",
                     tok.sp_->IdToPiece(static_cast<int>(want)), "'", ", the SentencePiece model's ",
                     eos ? "eos" : "unk", " piece (id ", want, "); another one is not supported");
  }
  if (const auto [token, source] = files.named("pad_token"); token) {
    const int64_t id = id_of(*token);
    OMNI_CHECK_INPUT(id >= 0, source, ": pad_token '", *token, "' is not a piece of ", tok.path_,
                     " (a new padding token is not supported)");
    tok.pad_id_ = id;
  }
  // transformers 5 adds a new bos first, then the additional special tokens in their order.
  if (const auto [token, source] = files.named("bos_token"); token) add_special(*token, source, "bos_token");
  for (const auto& [token, key] : files.additional()) add_special(token, files.config_path, key);
  files.check_added_tokens_decoder(id_of, "an added token outside spiece.model and extra_ids is not supported");
  files.finish();
  // After the checks, so that a bad folder gives one error line.
  OMNI_INFO("tokenizer: ", tokenizer_dir, " has no tokenizer.json; tokenizing with its spiece.model (SentencePiece, ",
            "as transformers' T5Tokenizer)");
  tok.sort_special();
  return tok;
}

Umt5Tokenizer::~Umt5Tokenizer() = default;
Umt5Tokenizer::Umt5Tokenizer(Umt5Tokenizer&&) noexcept = default;
Umt5Tokenizer& Umt5Tokenizer::operator=(Umt5Tokenizer&&) noexcept = default;

int64_t Umt5Tokenizer::vocab_size() const {
  return json_ ? json_->vocab_size() : sp_->GetPieceSize();
}

std::vector<int64_t> Umt5Tokenizer::encode(const std::string& text) const {
  if (json_) return json_->encode(text, /*add_special_tokens=*/false);
  std::vector<int64_t> ids;
  auto encode_segment = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    std::vector<int> seg;
    const std::string piece_text = text.substr(begin, end - begin);
    const std::string error = status_error([&] { return sp_->Encode(piece_text, &seg); });
    OMNI_CHECK(error.empty(), path_, ": SentencePiece failed to encode a prompt: ", error);
    ids.insert(ids.end(), seg.begin(), seg.end());
  };
  // Special tokens are matched leftmost, longest first, on the raw text (HF's added-token split).
  size_t seg_begin = 0;
  size_t i = 0;
  while (i < text.size()) {
    const std::pair<std::string, int64_t>* hit = nullptr;
    if (text[i] == '<') {
      for (const auto& sp : special_) {
        if (text.compare(i, sp.first.size(), sp.first) == 0) {
          hit = &sp;
          break;
        }
      }
    }
    if (hit) {
      encode_segment(seg_begin, i);
      ids.push_back(hit->second);
      i += hit->first.size();
      seg_begin = i;
    } else {
      ++i;
    }
  }
  encode_segment(seg_begin, text.size());
  return ids;
}

namespace {
// HF truncates the sequence to max_length minus the special tokens it adds, then appends eos.
std::vector<int64_t> with_eos(std::vector<int64_t> ids, int64_t eos, int64_t max_length) {
  OMNI_CHECK_USAGE(max_length >= 1, "max_sequence_length must be at least 1 (room for eos), got ", max_length);
  if (static_cast<int64_t>(ids.size()) > max_length - 1) ids.resize(static_cast<size_t>(max_length - 1));
  ids.push_back(eos);
  return ids;
}
}  // namespace

std::vector<int64_t> Umt5Tokenizer::encode_with_eos(const std::string& text, int64_t max_length) const {
  return with_eos(encode(text), eos_id_, max_length);
}

TokenizedBatch Umt5Tokenizer::operator()(const std::vector<std::string>& texts, int64_t max_length) const {
  std::vector<std::vector<int64_t>> ids;
  ids.reserve(texts.size());
  for (const auto& t : texts) ids.push_back(encode(t));
  return batch(ids, max_length);
}

TokenizedBatch Umt5Tokenizer::batch(const std::vector<std::vector<int64_t>>& texts, int64_t max_length) const {
  const auto batch = static_cast<int64_t>(texts.size());
  TokenizedBatch out;
  out.input_ids = at::full({batch, max_length}, pad_id_, at::TensorOptions().dtype(at::kLong));  // [B, L]
  out.attention_mask = at::zeros({batch, max_length}, at::TensorOptions().dtype(at::kLong));     // [B, L]
  auto ids_acc = out.input_ids.accessor<int64_t, 2>();
  auto mask_acc = out.attention_mask.accessor<int64_t, 2>();
  for (int64_t b = 0; b < batch; ++b) {
    const auto ids = with_eos(texts[static_cast<size_t>(b)], eos_id_, max_length);
    for (size_t t = 0; t < ids.size(); ++t) {
      ids_acc[b][t] = ids[t];
      mask_acc[b][t] = 1;
    }
    out.lengths.push_back(static_cast<int64_t>(ids.size()));
  }
  return out;
}

}  // namespace omni::text
