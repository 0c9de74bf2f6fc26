// omni-make-checkpoint: writes a random-weight checkpoint in the diffusers Wan2.2 layout.
//
//   omni-make-checkpoint --kind t2v-a14b --preset tiny --seed 0 --output /tmp/wan-tiny
//   omni-make-checkpoint --kind ti2v-5b --preset tiny --heads 8 --layers 4 --dtype bfloat16 \
//       --max-shard-bytes 100000 --output /tmp/wan-ti2v-sharded
//
// A preset gives every size; the flags below override single fields. Exit codes as omni-generate: 0 success,
// 2 bad usage, 1 anything else.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "generator/checkpoint_generator.h"

namespace {

using omni::generator::CheckpointSpec;

int run(int argc, char** argv) {
  CLI::App app{"Writes a random-weight Wan2.2 checkpoint (diffusers layout) for tests and benchmarks."};
  std::string kind, preset = "tiny", output, dtype, vae_dtype;
  uint64_t seed = 0;
  bool overwrite = false;
  int64_t layers = 0, heads = 0, head_dim = 0, ffn_dim = 0, freq_dim = 0;
  int64_t text_d_model = 0, text_layers = 0, text_heads = 0, text_d_kv = 0, text_d_ff = 0, vocab = 0,
          tokenizer_vocab = 0;
  int64_t vae_base_dim = 0, vae_res_blocks = 0, z_dim = 0, max_shard_bytes = 0;
  double boundary_ratio = 0, flow_shift = 0;

  std::string presets;
  for (const auto& p : omni::generator::preset_names()) presets += (presets.empty() ? "" : ", ") + p;
  app.add_option("--kind", kind, "t2v-a14b, i2v-a14b or ti2v-5b")->required();
  app.add_option("--preset", preset, "sizes to start from: " + presets)->capture_default_str();
  app.add_option("--seed", seed, "seed of the random weights")->capture_default_str();
  app.add_option("--output", output, "folder to create (written atomically)")->required();
  app.add_flag("--overwrite", overwrite, "replace an existing output folder");
  auto* o_layers = app.add_option("--layers", layers, "transformer blocks");
  auto* o_heads = app.add_option("--heads", heads, "transformer attention heads");
  auto* o_head_dim = app.add_option("--head-dim", head_dim, "transformer attention head dim (even)");
  auto* o_ffn = app.add_option("--ffn-dim", ffn_dim, "transformer feed-forward dim");
  auto* o_freq = app.add_option("--freq-dim", freq_dim, "transformer timestep sinusoid dim (even)");
  auto* o_t_model = app.add_option("--text-d-model", text_d_model, "UMT5 d_model (also the transformer's text_dim)");
  auto* o_t_layers = app.add_option("--text-layers", text_layers, "UMT5 blocks");
  auto* o_t_heads = app.add_option("--text-heads", text_heads, "UMT5 attention heads");
  auto* o_t_kv = app.add_option("--text-d-kv", text_d_kv, "UMT5 head dim");
  auto* o_t_ff = app.add_option("--text-d-ff", text_d_ff, "UMT5 feed-forward dim");
  auto* o_vocab = app.add_option("--vocab-size", vocab, "UMT5 embedding rows");
  auto* o_tok =
      app.add_option("--tokenizer-vocab-size", tokenizer_vocab, "SentencePiece pieces to train (<= --vocab-size)");
  auto* o_vae_base = app.add_option("--vae-base-dim", vae_base_dim, "VAE base channel count");
  auto* o_vae_res = app.add_option("--vae-res-blocks", vae_res_blocks, "VAE residual blocks per level");
  std::vector<int64_t> vae_dim_mult;
  auto* o_vae_mult = app.add_option("--vae-dim-mult", vae_dim_mult,
                                    "VAE channel multiplier per level, 4 values (base-dim x each), e.g. 1,3,2,4")
                         ->delimiter(',')
                         ->expected(4);
  auto* o_z = app.add_option("--z-dim", z_dim, "latent channels (transformer in/out channels follow)");
  auto* o_boundary = app.add_option("--boundary-ratio", boundary_ratio, "expert switch (A14B kinds)");
  auto* o_shift = app.add_option("--flow-shift", flow_shift, "scheduler flow_shift");
  auto* o_dtype = app.add_option("--dtype", dtype,
                                 "storage dtype of transformers and text encoder: float32 or bfloat16 (preset: "
                                 "float32, full: bfloat16)");
  auto* o_vae_dtype =
      app.add_option("--vae-dtype", vae_dtype, "storage dtype of the VAE: float32 (default) or bfloat16");
  auto* o_shard = app.add_option("--max-shard-bytes", max_shard_bytes,
                                 "write components larger than this as shards with an index json (0: never)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return static_cast<int>(omni::ExitCode::kUsage);
  }

  CheckpointSpec spec = omni::generator::make_preset(omni::generator::parse_kind(kind), preset);
  spec.seed = seed;
  const auto set = [](CLI::Option* opt, auto& field, auto value) {
    if (opt->count() > 0) field = value;
  };
  set(o_layers, spec.transformer.num_layers, layers);
  set(o_heads, spec.transformer.num_attention_heads, heads);
  set(o_head_dim, spec.transformer.attention_head_dim, head_dim);
  set(o_ffn, spec.transformer.ffn_dim, ffn_dim);
  set(o_freq, spec.transformer.freq_dim, freq_dim);
  set(o_t_model, spec.text_encoder.d_model, text_d_model);
  set(o_t_model, spec.transformer.text_dim, text_d_model);
  set(o_t_layers, spec.text_encoder.num_layers, text_layers);
  set(o_t_heads, spec.text_encoder.num_heads, text_heads);
  set(o_t_kv, spec.text_encoder.d_kv, text_d_kv);
  set(o_t_ff, spec.text_encoder.d_ff, text_d_ff);
  set(o_vocab, spec.text_encoder.vocab_size, vocab);
  set(o_tok, spec.tokenizer_vocab_size, tokenizer_vocab);
  // A smaller embedding than the preset's tokenizer: shrink the tokenizer with it unless both were given.
  if (o_vocab->count() > 0 && o_tok->count() == 0 && spec.tokenizer_vocab_size > vocab) {
    spec.tokenizer_vocab_size = vocab;
  }
  set(o_vae_base, spec.vae.base_dim, vae_base_dim);
  set(o_vae_res, spec.vae.num_res_blocks, vae_res_blocks);
  if (o_vae_mult->count() > 0) {
    // Four levels: the three downsamples between them give the pipelines' spatial factor 8 (16 with patch 2).
    for (int64_t m : vae_dim_mult) OMNI_CHECK_USAGE(m > 0, "--vae-dim-mult values must be positive, got ", m);
    spec.vae.dim_mult = vae_dim_mult;
  }
  if (o_z->count() > 0) omni::generator::set_latent_channels(spec, z_dim);
  set(o_boundary, spec.boundary_ratio, boundary_ratio);
  set(o_shift, spec.flow_shift, flow_shift);
  if (o_dtype->count() > 0) spec.dtype = omni::parse_dtype(dtype, "--dtype", {at::kFloat, at::kBFloat16});
  if (o_vae_dtype->count() > 0)
    spec.vae_dtype = omni::parse_dtype(vae_dtype, "--vae-dtype", {at::kFloat, at::kBFloat16});
  set(o_shard, spec.max_shard_bytes, max_shard_bytes);

  const std::string path = omni::generator::generate_checkpoint(spec, output, overwrite);
  std::printf("%s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return omni::run_tool("omni-make-checkpoint", run, argc, argv);
}
