// The UMT5 tokenizer of the Wan pipelines: the checkpoint's tokenizer folder as transformers loads it. The prompt
// cleaning before it is the pipeline's (pipeline/prompt_encoding.h).
//
// tokenizer/tokenizer.json, when the folder has one, rules the ids (the Wan2.2 and Diffusers folders carry it,
// and transformers' fast tokenizer loads it): text/tokenizer_json.h encodes it as
// T5TokenizerFast(tokenizer_file=...) does - its Unigram model with the file's unk_id (UMT5: <unk> is 3) and
// byte_fallback, normalizers, pre-tokenizer and added tokens (<extra_id_N> written in a prompt is its id).
//
// A folder with spiece.model alone is tokenized by SentencePiece, with what HF's tokenizer adds mirrored:
// - special tokens written in the text ("</s>", "<pad>", "<unk>") are matched before normalization and become
//   their ids; SentencePiece alone would spell them out piece by piece. The text between them is encoded on
//   its own (the Metaspace pre-tokenizer prepends "▁" to every segment, as SentencePiece's dummy prefix does);
// - the fast tokenizer's WhitespaceSplit equals SentencePiece's own whitespace folding for T5 models (pieces
//   never span "▁", extra whitespace removed), so whole segments go through SentencePiece unchanged.
// Both: eos (</s>) is appended (TemplateProcessing "$A </s>"); truncation to max_length keeps eos as the last
// id; padding to max_length with the pad id, mask 0.
//
// libsentencepiece is opened at run time, privately (RTLD_LOCAL | RTLD_DEEPBIND), never linked: Debian's copy
// exports the protobuf it bundles, and so does LibTorch's libtorch_cpu.so (see text/sentencepiece_library.h). An
// executable must therefore not have libsentencepiece among its start-up libraries.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace omni::io {
class ModelDir;
}

namespace omni::text {

class TokenizerJson;

// What `tokenizer(texts, padding="max_length", max_length=L, truncation=True, add_special_tokens=True,
// return_attention_mask=True, return_tensors="pt")` returns.
struct TokenizedBatch {
  at::Tensor input_ids;          // [B, L] int64
  at::Tensor attention_mask;     // [B, L] int64, 1 for real tokens (eos included)
  std::vector<int64_t> lengths;  // real tokens per row (the mask's row sums)
};

class Umt5Tokenizer {
 public:
  // `spiece_path`: a SentencePiece model with T5's ids (pad 0, eos 1, unk 2). A missing or unreadable file
  // is an input error naming it.
  explicit Umt5Tokenizer(const std::string& spiece_path);
  // The tokenizer folder of a checkpoint: tokenizer.json when present (else spiece.model, with one info line
  // saying so), and tokenizer_config.json and special_tokens_map.json when present, read as transformers'
  // T5Tokenizer reads them (io::ConfigFile's rule): a T5 tokenizer_class; <extra_id_N> for extra_ids (default
  // 100); bos / pad / eos / unk and the additional special tokens matched in the text with transformers' ids.
  // An eos or unk other than the model's, a pad or added token the tokenizer does not have, or SentencePiece
  // options are input errors naming the file and the key.
  static Umt5Tokenizer from_dir(const std::string& tokenizer_dir);
  // A SentencePiece model's serialized bytes (ComfyUI's text-encoder files carry one as the `spiece_model`
  // tensor); `source` names it in messages.
  static Umt5Tokenizer from_spiece_bytes(const std::string& serialized, const std::string& source);
  // The tokenizer of a model: its tokenizer folder, or the SentencePiece model its text-encoder file carries.
  static Umt5Tokenizer of_model(const io::ModelDir& model);

  ~Umt5Tokenizer();
  Umt5Tokenizer(Umt5Tokenizer&&) noexcept;
  Umt5Tokenizer& operator=(Umt5Tokenizer&&) noexcept;

  // Ids of `text` without eos or padding (HF's tokenizer(text, add_special_tokens=False)).
  std::vector<int64_t> encode(const std::string& text) const;
  // Ids with eos appended, truncated to `max_length` keeping eos last; no padding.
  std::vector<int64_t> encode_with_eos(const std::string& text, int64_t max_length) const;
  // The padded batch; texts are tokenized as given (clean them first, as the pipeline does).
  TokenizedBatch operator()(const std::vector<std::string>& texts, int64_t max_length) const;
  // The padded batch of texts already encoded (encode's ids): each truncated to `max_length` - 1, eos
  // appended, padded; what operator() gives for their texts, without tokenizing them again.
  TokenizedBatch batch(const std::vector<std::vector<int64_t>>& ids, int64_t max_length) const;

  int64_t pad_id() const { return pad_id_; }
  int64_t eos_id() const { return eos_id_; }
  int64_t vocab_size() const;
  const std::string& path() const { return path_; }

 private:
  Umt5Tokenizer() = default;
  // Loads sp_ from path_ (or from `serialized` bytes) and records its control pieces.
  void load_spiece(const std::string* serialized);
  // <extra_id_0> .. <extra_id_{n-1}> after the SentencePiece vocabulary, as T5Tokenizer numbers them.
  void add_extra_ids(int64_t n);
  void sort_special();

  std::string path_;
  std::unique_ptr<TokenizerJson> json_;  // tokenizer.json rules the ids (sp_ and special_ unused)
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int64_t pad_id_ = 0;
  int64_t eos_id_ = 1;
  // spiece.model: texts of the special tokens HF matches verbatim in the input (control and unknown pieces) with their
  // ids, longest first so that a longer token wins over a prefix of it.
  std::vector<std::pair<std::string, int64_t>> special_;
};

}  // namespace omni::text
