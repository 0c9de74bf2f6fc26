// One layer of Wan2.2-S2V's AudioInjector_WAN (audio_injector, wan/modules/s2v/audio_utils.py, applied by
// WanModel_S2V.after_transformer_block): after its block, each latent frame's video tokens attend to that frame's
// audio tokens, and the result is added to them (no gate). Reference and motion tokens are not touched.
//
//   audio_injector.injector.<k>                        WanCrossAttention (q, k, v, o; norm_q, norm_k RMSNorm over D)
//   audio_injector.injector_adain_layers.<k>.linear    diffusers' AdaLayerNorm(chunk_dim 1): Linear D -> 2D of the
//                                                      frame's SiLU'd global audio token, shift then scale, around a
//                                                      LayerNorm without affine, eps 1e-5
// Wan keeps all layers in one module; here each layer is a module of its own, registered under "audio_injector"
// with its index in its names, so that it can be an HSDP unit of its own after its block (as Animate's face
// adapters are) while its weights keep the checkpoint's names.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_attention.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

class WanS2VAudioInjector : public Module {
 public:
  // index: k, the layer's position in audio_inject_layers.
  WanS2VAudioInjector(int64_t index, int64_t dim, int64_t heads, double eps);

  // video [T, hw, D]: the video tokens of T latent frames, frame-major; audio [T, n + 1, D]: each frame's audio
  // tokens; audio_global [T, D]: each frame's AdaLN input. Returns what is added to the video tokens, [T, hw, D]
  // in video's dtype. adain (optional): the AdaLN output, for dumps.
  at::Tensor forward(const at::Tensor& video, const at::Tensor& audio, const at::Tensor& audio_global,
                     at::Tensor* adain = nullptr) const;

 private:
  int64_t dim_;
  WanAttention* attention_;
  wan::Linear* adain_linear_;
};

}  // namespace omni::models
