// SHA-256 against the FIPS 180-4 / NIST test vectors, fed whole and in pieces that cross block boundaries.
#include "core/sha256.h"

#include <gtest/gtest.h>

#include <string>

#include "io_test_util.h"

namespace {

std::string digest(const std::string& text, size_t piece) {
  omni::Sha256 sha;
  for (size_t i = 0; i < text.size(); i += piece) sha.update(text.data() + i, std::min(piece, text.size() - i));
  return sha.hex_digest();
}

TEST(Sha256, NistVectors) {
  const std::string two_blocks =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";  // 56 bytes: padding spills
  for (size_t piece : {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{1000}}) {
    EXPECT_EQ(digest("", piece), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(digest("abc", piece), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(digest(two_blocks, piece), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  }
  EXPECT_EQ(digest(std::string(1000000, 'a'), 4096),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FileAndMissingFile) {
  omni::test_util::TempDir dir;
  omni::test_util::write_file(dir / "f", "abc");
  EXPECT_EQ(omni::sha256_file(dir / "f"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  try {
    omni::sha256_file(dir / "nope");
    ADD_FAILURE() << "no error";
  } catch (const omni::Error& e) {
    EXPECT_EQ(e.exit_code(), 3);
    EXPECT_NE(std::string(e.what()).find(dir / "nope"), std::string::npos);
  }
}

}  // namespace
