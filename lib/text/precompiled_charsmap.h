// HF tokenizers' `Precompiled` normalizer: the SentencePiece precompiled charsmap (nmt_nfkc and friends) that
// transformers' converter stores in a tokenizer.json as {"type": "Precompiled", "precompiled_charsmap": base64},
// applied the way tokenizers applies it (the spm_precompiled crate's normalize_string), which is NOT the way
// SentencePiece itself applies the same blob.
//
// The blob (ModelProto.normalizer_spec.precompiled_charsmap):
//   uint32 little-endian T (the trie's size in bytes), then T / 4 uint32 LE units of a Darts double-array trie
//   over UTF-8 byte strings, then a pool of NUL-terminated UTF-8 strings; a trie value is a byte offset into
//   the pool, and the replacement runs from there to the next NUL (or the pool's end).
//
// normalize(text), as tokenizers does it:
//   for each extended grapheme cluster G of the text (UAX #29):
//     if G is shorter than 6 bytes and some prefix of G's bytes is a key of the trie, the WHOLE of G is replaced
//       by the replacement of the SHORTEST such prefix (a grapheme "Ａ" + U+0301 becomes "A": the accent is
//       dropped, because "Ａ" alone is a key; that is tokenizers' behaviour and is mirrored on purpose);
//     otherwise each code point C of G is replaced by the replacement of the shortest key that is a prefix of C's
//       bytes, or kept as it is when there is none.
//   A NUL byte ends a key lookup (the keys are C strings), so "\0" is never replaced.
// The grapheme clusters come from ICU's character BreakIterator, corrected for the Extend / SpacingMark /
// Prepend code points of Unicode 17 (the unicode-segmentation crate tokenizers uses) that an older ICU (72:
// Unicode 15.0) does not know; the .cpp says where the two differ and why the rest does not change the output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace omni::text {

class PrecompiledCharsmap {
 public:
  // `blob`: the decoded charsmap bytes; `source` names where they came from (a file, a tokenizer.json key) for
  // errors. A blob shorter than its 4-byte header, a trie size that is not a multiple of 4, smaller than one
  // unit or running past the blob's end, or a pool that is not UTF-8 is an input error naming `source`.
  PrecompiledCharsmap(const std::string& blob, const std::string& source);

  // The normalized text. `utf8` must be valid UTF-8 (as a Rust &str is); anything else is an input error. A
  // trie that walks past its units or a value past the pool (or inside a UTF-8 sequence of it), which
  // tokenizers would panic on, is an input error naming the charsmap's source.
  std::string normalize(const std::string& utf8) const;

  // Standard base64 (RFC 4648 alphabet, '=' padding required, as tokenizers' BASE64_STANDARD decodes the JSON
  // field); a character outside the alphabet, a bad length or padding, or non-zero trailing bits is an input
  // error naming `source`.
  static std::string base64_decode(const std::string& text, const std::string& source);

  const std::string& source() const { return source_; }

 private:
  // The replacement of the shortest trie key that is a prefix of [key, key + size) (stopping at a NUL byte);
  // false when no key is a prefix.
  bool transform(const char* key, size_t size, const char** out, size_t* out_size) const;

  std::vector<uint32_t> units_;
  std::string pool_;
  std::string source_;
};

}  // namespace omni::text
