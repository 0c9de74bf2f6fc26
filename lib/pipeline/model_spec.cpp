#include "pipeline/model_spec.h"

#include <algorithm>

#include "core/error.h"
#include "io/safetensors.h"

namespace omni::pipeline {

const char* ModelSpec::expert_name(int expert) {
  return expert == 0 ? "transformer" : "transformer_2";
}

int ModelSpec::spatial_multiple() const {
  const auto& p = experts.at(0).patch_size;
  return static_cast<int>(vae.scale_factor_spatial * std::max(p[1], p[2]));
}

bool ModelSpec::stores_float8(int expert) const {
  const io::Checkpoint& ckpt = dir->checkpoint(expert_name(expert));
  return std::any_of(ckpt.names().begin(), ckpt.names().end(),
                     [&](const std::string& n) { return ckpt.float8_row_scales(n).defined(); });
}

std::shared_ptr<const ModelSpec> read_model_spec(std::shared_ptr<const io::ModelDir> dir) {
  auto spec = std::make_shared<ModelSpec>();
  const io::ModelDir& m = *dir;
  for (int e = 0; e < 2; ++e) {
    const char* name = ModelSpec::expert_name(e);
    if (!m.has(name)) continue;
    spec->experts.push_back(
        models::WanTransformerConfig::from_json(m.component_config(name), m.component_config_path(name)));
  }
  OMNI_CHECK_INPUT(!spec->experts.empty(), m.root(), ": no transformer component");
  spec->text_encoder =
      models::Umt5Config::from_json(m.component_config("text_encoder"), m.component_config_path("text_encoder"));
  // Which name the (tied) embedding is stored under decides the module tree: shared.weight and/or
  // encoder.embed_tokens.weight.
  spec->text_encoder.resolve_embedding(m.checkpoint("text_encoder"));
  spec->vae = models::WanVaeConfig::from_json(m.component_config("vae"), m.component_config_path("vae"));
  spec->scheduler_source = m.component_config_path("scheduler");
  spec->scheduler = m.component_config("scheduler");
  if (spec->scheduler.is_object() && spec->scheduler.contains("flow_shift") &&
      spec->scheduler["flow_shift"].is_number())
    spec->scheduler_flow_shift = spec->scheduler["flow_shift"].get<double>();
  spec->dir = std::move(dir);
  return spec;
}

}  // namespace omni::pipeline
