// The weight files a run reads, as its sidecars record them (omni-compare lists them when two runs differ, so a
// checkpoint replaced under the same folder shows): per component its files, each with its size and its SHA-256
// where that is known without reading the file (a Hugging Face cache snapshot's files link to blobs named by
// their SHA-256), else its modification time. Nothing is read: a 60 GB model costs a few stat calls.
#pragma once

#include <nlohmann/json.hpp>

namespace omni::io {
class ModelDir;
}

namespace omni::job {

// [{"component": "transformer", "file": PATH, "bytes": N, "sha256": HEX | "modified": "2026-12-06T03:12:10Z"}, ...]
// for the weight-bearing components (transformer, transformer_2, text_encoder, vae, image_encoder) the model has.
nlohmann::json model_files_record(const io::ModelDir& dir);

}  // namespace omni::job
