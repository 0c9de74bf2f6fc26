// torch.save's .pth files read without Python: the zip archive (stored, uncompressed records) holding
// <archive>/data.pkl, the pickled state dict, and <archive>/data/<key>, one record per storage.
//
// The pickle is read by a small pickle machine that accepts only what a plain state dict needs:
// collections.OrderedDict, torch._utils._rebuild_tensor_v2 (typed storages: torch.<Type>Storage) and
// _rebuild_tensor_v3 (torch.storage.UntypedStorage with a torch.<dtype>, what torch 2.x writes for float8), plain
// containers and scalars, persistent ids naming storages. Any other GLOBAL, or an opcode a
// state dict does not use, is an input error (exit 3) naming it; nothing from the file is ever executed.
// Each tensor must be contiguous (row-major) within its storage; its bytes are then read by offset straight from
// the memory-mapped archive, only the slice asked for (TensorFile::read_range).
// A legacy (pre-1.6, non-zip) pickle is an input error giving the one-line command that re-saves it as a zip.
#pragma once

#include <string>

#include "io/safetensors.h"

namespace omni::io {

class PthFile : public TensorFile {
 public:
  explicit PthFile(const std::string& path);
};

}  // namespace omni::io
