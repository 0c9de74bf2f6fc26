// A HF `tokenizers` tokenizer.json of the T5 / UMT5 family (a Unigram model), encoded in our own C++ with the
// semantics of tokenizers 0.23 (Tokenizer.from_file) and of transformers 5's T5 tokenizer on top of it. No
// SentencePiece: the ids are those of the fast tokenizer diffusers uses, including where it differs from
// SentencePiece (an out-of-vocabulary character is one fused <unk> where SentencePiece falls back to bytes,
// <extra_id_N> written in a prompt is its added id, ...).
//
// The pipeline of one encode, as tokenizers runs it:
//  1. added tokens with normalized = false are split off the raw text (leftmost-longest match, then the
//     single_word / lstrip / rstrip rules of added_vocabulary.rs; a discarded match still consumes its span);
//  2. every other piece is normalized (Sequence / Replace / Precompiled / Strip / Prepend) and the added tokens
//     with normalized = true are split off the normalized text the same way; empty pieces are dropped;
//  3. the pre-tokenizer (Metaspace, WhitespaceSplit, Sequence) splits the pieces further; Metaspace's
//     prepend_scheme "first" prepends only to a piece that begins at offset 0 of the ORIGINAL text (so not to
//     the text after a leading added token, nor after leading characters the normalizer removed, nor to any
//     word when WhitespaceSplit ran first on a text that starts with whitespace);
//  4. the Unigram model encodes each piece (Viterbi as Unigram::encode_optimized: best score, ties keep the
//     earlier-reached path, i.e. the piece that starts earliest; a character without a single-character piece
//     gets an <unk> node scored min_score - 10; consecutive <unk> nodes are fused into one token; a fused
//     string is looked up again, then byte_fallback turns it into <0xNN> pieces when all of them exist, else
//     it is unk_id);
//  5. the post-processor's single template adds the special tokens when add_special_tokens is true.
//
// Loaders (what produced the reference ids):
//  kTokenizers       tokenizers.Tokenizer.from_file(path): the file as it is.
//  kT5TokenizerFile  transformers 5 T5TokenizerFast(tokenizer_file=path) (the default): the file's components,
//                    but the post-processor is always "$A </s>" (T5Tokenizer.__init__ replaces the file's), and
//                    "</s>", "<unk>", "<pad>" and <extra_id_0..extra_ids-1> are added as special, non-normalized
//                    added tokens when the file's added tokens lack them (transformers does; the id is the
//                    vocabulary's when the content is a piece, else the next free id).
//  kT5FromPretrained transformers 5 AutoTokenizer.from_pretrained(dir) / T5TokenizerFast.from_pretrained(dir)
//                    on a folder with this tokenizer.json (and a tokenizer_config.json without
//                    added_tokens_decoder, as transformers 5 saves it) - what diffusers loads: transformers
//                    REBUILDS the tokenizer from the vocabulary: Unigram with unk_id 2 (whatever the file says;
//                    for UMT5 id 2 is "<s>", so an unknown character becomes 2, not 3) and byte_fallback false,
//                    only the file's Precompiled normalizer (its Replace normalizers are dropped), pre-tokenizer
//                    Sequence[WhitespaceSplit, Metaspace(always, split)] (tabs, newlines and runs of spaces
//                    vanish), post-processor "$A </s>", the file's added tokens plus the T5 ones as above.
// truncation and padding in the file are ignored (encode returns the full sequence).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace omni::text {

class TokenizerJson {
 public:
  enum class Loader { kTokenizers, kT5TokenizerFile, kT5FromPretrained };

  // `path`: a tokenizer.json. A missing or unparsable file, a missing or mistyped key, or a component this class
  // does not implement (named in the message) is an input error naming the file and the key. `extra_ids` is
  // T5Tokenizer's (100 by default; used by the two T5 loaders only).
  explicit TokenizerJson(const std::string& path, Loader loader = Loader::kT5TokenizerFile, int extra_ids = 100);
  ~TokenizerJson();
  TokenizerJson(TokenizerJson&&) noexcept;
  TokenizerJson& operator=(TokenizerJson&&) noexcept;

  // `tok(text, add_special_tokens=...).input_ids` without truncation or padding. `text` must be UTF-8 (a
  // malformed sequence is a usage error: Python could not have held it in a str).
  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = true) const;

  // The id of a token string (an added token first, then the model's vocabulary, as token_to_id), or -1.
  int64_t token_to_id(const std::string& token) const;
  // Whether `token` is one of the added tokens (matched whole in the text before normalization or after it).
  bool is_added_token(const std::string& token) const;
  int64_t pad_id() const;  // "<pad>"'s id, or -1
  int64_t eos_id() const;  // "</s>"'s id, or -1
  int64_t unk_id() const;  // the Unigram model's unk_id as loaded (-1 when the file has none)
  // get_vocab_size(with_added_tokens=True): the number of distinct token strings, vocabulary and added tokens.
  int64_t vocab_size() const;
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::text
