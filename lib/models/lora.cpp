#include "models/lora.h"

#include <algorithm>
#include <optional>
#include <set>

#include "core/docs_links.h"
#include "core/error.h"
#include "core/files.h"
#include "core/log.h"
#include "core/text.h"
#include "io/safetensors.h"

namespace omni::models {
namespace {

// Our block-level module paths (after "blocks.N.") and root-level ones, with their original Wan names.
const std::map<std::string, std::string>& block_names() {
  static const std::map<std::string, std::string> m = {
      {"attn1.to_q", "self_attn.q"},
      {"attn1.to_k", "self_attn.k"},
      {"attn1.to_v", "self_attn.v"},
      {"attn1.to_out.0", "self_attn.o"},
      {"attn1.norm_q", "self_attn.norm_q"},
      {"attn1.norm_k", "self_attn.norm_k"},
      {"attn2.to_q", "cross_attn.q"},
      {"attn2.to_k", "cross_attn.k"},
      {"attn2.to_v", "cross_attn.v"},
      {"attn2.to_out.0", "cross_attn.o"},
      {"attn2.norm_q", "cross_attn.norm_q"},
      {"attn2.norm_k", "cross_attn.norm_k"},
      {"attn2.add_k_proj", "cross_attn.k_img"},
      {"attn2.add_v_proj", "cross_attn.v_img"},
      {"attn2.norm_added_k", "cross_attn.norm_k_img"},
      {"ffn.net.0.proj", "ffn.0"},
      {"ffn.net.2", "ffn.2"},
      // diffusers' norm2 is the cross-attention norm, Wan's norm3 (Wan's norm2, before the FFN, has no weights).
      {"norm2", "norm3"},
      {"scale_shift_table", "modulation"}};
  return m;
}

const std::map<std::string, std::string>& root_names() {
  static const std::map<std::string, std::string> m = {
      {"patch_embedding", "patch_embedding"},
      {"vace_patch_embedding", "vace_patch_embedding"},
      {"condition_embedder.text_embedder.linear_1", "text_embedding.0"},
      {"condition_embedder.text_embedder.linear_2", "text_embedding.2"},
      {"condition_embedder.time_embedder.linear_1", "time_embedding.0"},
      {"condition_embedder.time_embedder.linear_2", "time_embedding.2"},
      {"condition_embedder.time_proj", "time_projection.1"},
      {"condition_embedder.image_embedder.norm1", "img_emb.proj.0"},
      {"condition_embedder.image_embedder.ff.net.0.proj", "img_emb.proj.1"},
      {"condition_embedder.image_embedder.ff.net.2", "img_emb.proj.3"},
      {"condition_embedder.image_embedder.norm2", "img_emb.proj.4"},
      {"condition_embedder.image_embedder.pos_embed", "img_emb.emb_pos"},
      {"proj_out", "head.head"},
      {"scale_shift_table", "head.modulation"}};
  return m;
}

// kDiffM: Kijai's blocks.N.diff_m, a full delta of the block's modulation (our blocks.N.scale_shift_table).
enum class Part { kDown, kUp, kAlpha, kDiff, kDiffB, kDiffM };

// Key suffixes, longest first where one ends another.
const std::vector<std::pair<std::string, Part>>& suffixes() {
  static const std::vector<std::pair<std::string, Part>> s = {
      {".lora_A.weight", Part::kDown}, {".lora_B.weight", Part::kUp},  {".lora_down.weight", Part::kDown},
      {".lora_up.weight", Part::kUp},  {".lora_B.bias", Part::kDiffB}, {".alpha", Part::kAlpha},
      {".diff_b", Part::kDiffB},       {".diff_m", Part::kDiffM},      {".diff", Part::kDiff}};
  return s;
}

std::string underscored(std::string s) {
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

int64_t product(at::IntArrayRef dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  return shape_str(at::IntArrayRef(dims));
}

std::vector<int64_t> without_leading_ones(const std::vector<int64_t>& dims) {
  size_t i = 0;
  while (i < dims.size() && dims[i] == 1) ++i;
  return std::vector<int64_t>(dims.begin() + i, dims.end());
}

// The models a hidden size or an input channel count belongs to, for "this LoRA is for ..." hints.
std::string model_of_hidden_size(int64_t d) {
  switch (d) {
    case 5120:
      return "Wan2.2 T2V/I2V-A14B or Wan2.1 14B";
    case 3072:
      return "Wan2.2 TI2V-5B";
    case 1536:
      return "Wan2.1 1.3B";
    default:
      return "";
  }
}

std::string model_of_in_channels(int64_t c) {
  switch (c) {
    case 16:
      return "text-to-video model (16 latent channels)";
    case 36:
      return "image-to-video model (36 input channels: latent, mask, image)";
    case 48:
      return "TI2V-5B model (48 latent channels)";
    default:
      return "";
  }
}

// "; this LoRA is for a ... model, not for this ..." when the mismatched sizes name known models.
std::string kind_hint(const std::string& module, const std::vector<int64_t>& file_dims,
                      const std::vector<int64_t>& model_dims) {
  for (size_t i = 0; i < file_dims.size() && i < model_dims.size(); ++i) {
    if (file_dims[i] == model_dims[i]) continue;
    if (module == "patch_embedding" && i == 1) {
      const std::string theirs = model_of_in_channels(file_dims[i]), ours = model_of_in_channels(model_dims[i]);
      if (!theirs.empty() && !ours.empty()) return "; this LoRA is for an " + theirs + ", not this " + ours;
    }
    const std::string theirs = model_of_hidden_size(file_dims[i]);
    if (!theirs.empty()) {
      const std::string ours = model_of_hidden_size(model_dims[i]);
      return str_cat("; this LoRA is for a model of hidden size ", file_dims[i], " (", theirs, "), this one has ",
                     model_dims[i], ours.empty() ? "" : " (" + ours + ")");
    }
  }
  return "";
}

// The Wan2.1 I2V image-conditioning module that a key's module path names, as the file spells it ("k_img",
// "add_k_proj", "img_emb", ...), or "" for any other module. Wan2.2 has no image encoder, so a Wan2.1 LoRA used
// on it names modules it lacks; `body` is the key without its prefix and suffix, underscored for Kohya keys.
std::string wan21_image_module(const std::string& body, bool kohya) {
  const std::string sep = kohya ? "_" : ".";
  for (const char* root : {"img_emb", "condition_embedder.image_embedder"}) {
    const std::string r = kohya ? underscored(root) : root;
    if (body.rfind(r + sep, 0) == 0) return root;
  }
  // blocks.N.cross_attn.k_img, blocks.N.attn2.add_k_proj, ...
  const std::string blocks = "blocks" + sep;
  if (body.rfind(blocks, 0) != 0) return "";
  const size_t end = body.find(sep, blocks.size());  // after the block number
  if (end == std::string::npos) return "";
  const std::string rest = body.substr(end + 1);
  for (const std::string module : {"cross_attn.k_img", "cross_attn.v_img", "cross_attn.norm_k_img", "attn2.add_k_proj",
                                   "attn2.add_v_proj", "attn2.norm_added_k"}) {
    if (rest == (kohya ? underscored(module) : module)) return module.substr(module.find('.') + 1);
  }
  return "";
}

// The tensors of one module, as the file names them.
struct Entry {
  std::string down, up, alpha, diff, diff_b;
};

}  // namespace

std::string lora_file_path(const std::string& path, const std::string& flag) {
  if (is_dir(path)) {
    const std::string file = path + (path.back() == '/' ? "" : "/") + "pytorch_lora_weights.safetensors";
    OMNI_CHECK_INPUT(is_file(file), flag, " ", path, ": a folder without pytorch_lora_weights.safetensors");
    return file;
  }
  OMNI_CHECK_INPUT(is_file(path), flag, " ", path, ": no such file");
  return path;
}

std::string diffusers_module_name(const std::string& module) {
  // The tables read backwards. Only blocks.N.*: VACE and Animate, whose blocks are diffusers-named, have no
  // Wan-named twin here.
  auto reverse = [](const std::map<std::string, std::string>& table, const std::string& wan) -> std::string {
    for (const auto& [diffusers, original] : table)
      if (original == wan) return diffusers;
    return "";
  };
  if (module.rfind("blocks.", 0) == 0) {
    const size_t dot = module.find('.', 7);
    if (dot == std::string::npos) return "";
    const std::string d = reverse(block_names(), module.substr(dot + 1));
    return d.empty() ? "" : module.substr(0, dot + 1) + d;
  }
  return reverse(root_names(), module);
}

std::string wan_original_module_name(const std::string& module) {
  // blocks.N.*, and VACE's vace_blocks.N.* (Wan's VaceWanAttentionBlock: before_proj / after_proj besides).
  for (const std::string prefix : {"blocks.", "vace_blocks."}) {
    if (module.rfind(prefix, 0) != 0) continue;
    const size_t dot = module.find('.', prefix.size());
    if (dot == std::string::npos) return "";
    const std::string rest = module.substr(dot + 1), head = module.substr(0, dot + 1);
    if (prefix == "vace_blocks." && (rest == "proj_in" || rest == "proj_out"))
      return head + (rest == "proj_in" ? "before_proj" : "after_proj");
    auto it = block_names().find(rest);
    return it == block_names().end() ? "" : head + it->second;
  }
  auto it = root_names().find(module);
  return it == root_names().end() ? "" : it->second;
}

LoraSet::LoraSet(const std::vector<LoraSource>& sources, const std::vector<ParamRef>& params, const std::string& flag,
                 const std::string& component, bool strict) {
  // The model's modules: a parameter "x.weight" / "x.bias" belongs to module "x"; a bare parameter
  // (scale_shift_table) is its own module. Each is known by our name and its original Wan name, dotted and
  // underscored (Kohya). A model whose checkpoint names are Wan's own (Wan2.2-S2V) is known by its diffusers
  // names in their place: a diffusers/PEFT file for the Wan2.1/2.2 blocks it shares updates it too.
  std::map<std::string, const ParamRef*> by_name;
  std::set<std::string> modules;
  for (const auto& p : params) {
    by_name[p.name] = &p;
    std::string m = p.name;
    if (ends_with(m, ".weight"))
      m.resize(m.size() - 7);
    else if (ends_with(m, ".bias"))
      m.resize(m.size() - 5);
    modules.insert(m);
  }
  std::map<std::string, std::string> ours, wan, ours_u, wan_u;
  std::vector<std::string> known;  // for "closest names" hints
  for (const auto& m : modules) {
    ours[m] = m;
    ours_u[underscored(m)] = m;
    known.push_back(m);
    std::string w = wan_original_module_name(m);
    if (w.empty()) w = diffusers_module_name(m);
    if (!w.empty() && w != m) {
      wan[w] = m;
      wan_u[underscored(w)] = m;
      known.push_back(w);
    }
  }

  for (const auto& src : sources) {
    const std::string path = lora_file_path(src.path, flag);
    checkpoints_.push_back(std::make_unique<io::Checkpoint>(io::Checkpoint::open(path)));
    const io::Checkpoint& ck = *checkpoints_.back();
    const std::string where = flag + " " + path;
    OMNI_CHECK_INPUT(!ck.names().empty(), where, ": holds no tensor");

    std::map<std::string, Entry> entries;  // by our module name
    std::vector<std::string> unknown;
    std::vector<std::string> image_keys;  // keys of Wan2.1 image modules the model lacks, and their kinds
    std::set<std::string> image_kinds;
    for (const auto& key : ck.names()) {
      // Which naming the key uses: the prefix says; without one, ours first, then Wan's.
      std::string body = key;
      bool kohya = false, wan_first = false;
      if (body.rfind("lora_unet_", 0) == 0) {
        body = body.substr(10);
        kohya = true;
      } else if (body.rfind("text_encoder", 0) == 0 || body.rfind("lora_te", 0) == 0) {
        OMNI_FAIL_INPUT(where, ": key '", key, "' is a text-encoder LoRA; only the transformers take LoRA here");
      } else {
        for (const char* prefix : {"model.diffusion_model.", "diffusion_model.", "transformer.", "base_model.model."}) {
          const std::string p = prefix;
          if (body.rfind(p, 0) == 0) {
            body = body.substr(p.size());
            wan_first = p.find("diffusion_model") != std::string::npos;
            break;
          }
        }
      }
      // Adapters that are not W + B @ A: DoRA rescales each column, LyCORIS factors differently.
      for (const auto& [marker, kind] : {std::pair<const char*, const char*>{".dora_scale", "DoRA"},
                                         {".lora_magnitude_vector", "DoRA"},
                                         {".lora_mid.", "LyCORIS LoCon"},
                                         {".hada_w1_", "LyCORIS LoHa"},
                                         {".lokr_w1", "LyCORIS LoKr"}}) {
        OMNI_CHECK_INPUT(body.find(marker) == std::string::npos, where, ": key '", key, "' is a ", kind,
                         " tensor, which cannot be merged as W + scale * B @ A; only plain LoRA files are supported");
      }
      std::optional<Part> part;
      for (const auto& [suffix, p] : suffixes()) {
        if (ends_with(body, suffix)) {
          body.resize(body.size() - suffix.size());
          part = p;
          break;
        }
      }
      // blocks.N.diff_m updates the block's modulation table.
      if (part == Part::kDiffM) {
        body += kohya ? "_scale_shift_table" : ".scale_shift_table";
        part = Part::kDiff;
      }
      // Kohya keys are underscored and name Wan's modules first (musubi-tuner's convention); keys without a
      // prefix may use either naming.
      const auto& first = kohya ? wan_u : (wan_first ? wan : ours);
      const auto& second = kohya ? ours_u : (wan_first ? ours : wan);
      auto it = first.find(body);
      const bool found = it != first.end() || (it = second.find(body)) != second.end();
      if (part && !found) {
        const std::string kind = wan21_image_module(body, kohya);
        if (!kind.empty()) {
          image_keys.push_back(key);
          image_kinds.insert(kind);
          continue;
        }
      }
      if (!part || !found) {
        unknown.push_back(key);
        continue;
      }
      Entry& e = entries[it->second];
      std::string* slot = *part == Part::kDown    ? &e.down
                          : *part == Part::kUp    ? &e.up
                          : *part == Part::kAlpha ? &e.alpha
                          : *part == Part::kDiff  ? &e.diff
                                                  : &e.diff_b;
      OMNI_CHECK_INPUT(slot->empty(), where, ": keys '", *slot, "' and '", key, "' update the same tensor of ",
                       component, " module '", it->second, "'");
      *slot = key;
    }
    std::string image_hint;
    if (!image_keys.empty())
      image_hint = "; image conditioning (" + image_keys.front() +
                   ") exists only in image-to-video models with an image encoder (Wan2.1 I2V): this LoRA is for such "
                   "a model";
    OMNI_CHECK_INPUT(!entries.empty(), where, ": none of its ", ck.names().size(), " keys names a module of ",
                     component, " (first key '", ck.names().front(), "')", image_hint,
                     "; expected diffusers/PEFT (transformer.blocks.0.attn1.to_q.lora_A.weight), Wan "
                     "(diffusion_model.blocks.0.self_attn.q.lora_down.weight) or Kohya "
                     "(lora_unet_blocks_0_self_attn_q.lora_down.weight) names");

    // Shapes first: a file for another model kind is named as such rather than by its first odd key.
    int modules_updated = 0;
    for (const auto& [module, e] : entries) {
      const std::string weight = by_name.count(module + ".weight") ? module + ".weight" : module;
      const ParamRef* w = by_name.count(weight) ? by_name.at(weight) : nullptr;
      if (!e.down.empty() || !e.up.empty()) {
        OMNI_CHECK_INPUT(!e.down.empty() && !e.up.empty(), where, ": key '", e.down.empty() ? e.up : e.down,
                         "' has no matching ", e.down.empty() ? "lora_A / lora_down" : "lora_B / lora_up",
                         " tensor for ", component, " module '", module, "'");
        OMNI_CHECK_INPUT(w != nullptr, where, ": key '", e.down, "' updates ", component, " module '", module,
                         "', which has no weight");
        const auto& a = ck.info(e.down).shape;
        const auto& b = ck.info(e.up).shape;
        OMNI_CHECK_INPUT(a.size() >= 2 && b.size() >= 2, where, ": keys '", e.down, "' ", dims_str(a), " and '", e.up,
                         "' ", dims_str(b), " must be matrices (lora_A [rank, in], lora_B [out, rank])");
        OMNI_CHECK_INPUT(b[1] == a[0], where, ": rank mismatch for ", component, " module '", module, "': '", e.down,
                         "' has rank ", a[0], " ", dims_str(a), " but '", e.up, "' has rank ", b[1], " ", dims_str(b));
        bool trailing_ones = true;
        for (size_t i = 2; i < b.size(); ++i) trailing_ones = trailing_ones && b[i] == 1;
        const std::vector<int64_t> update{b[0], product(at::IntArrayRef(a).slice(1))};
        const std::vector<int64_t> expect{w->shape[0], product(at::IntArrayRef(w->shape).slice(1))};
        std::vector<int64_t> file_dims{b[0]};
        file_dims.insert(file_dims.end(), a.begin() + 1, a.end());
        const bool dims_match = a.size() == w->shape.size() ? file_dims == w->shape : update == expect;
        OMNI_CHECK_INPUT(trailing_ones && dims_match, where, ": '", e.up, "' ", dims_str(b), " x '", e.down, "' ",
                         dims_str(a), " does not fit ", component, " parameter '", weight, "' ", dims_str(w->shape),
                         kind_hint(module, file_dims, w->shape), " (", docs::kLoraDoesNotFit, ")");
        double alpha = static_cast<double>(a[0]);
        if (!e.alpha.empty()) {
          OMNI_CHECK_INPUT(ck.info(e.alpha).numel() == 1, where, ": alpha '", e.alpha, "' must be one number, got ",
                           dims_str(ck.info(e.alpha).shape));
          alpha = ck.read(e.alpha, at::kDouble).item<double>();
        }
        updates_[weight].push_back({&ck, e.down, e.up, "", src.scale * alpha / static_cast<double>(a[0])});
        shapes_[weight] = w->shape;
      } else {
        OMNI_CHECK_INPUT(e.alpha.empty(), where, ": alpha '", e.alpha, "' has no lora_A / lora_B beside it");
      }
      if (!e.diff.empty()) {
        // A leading 1 may be left out ([6, dim] for a modulation table of [1, 6, dim]).
        OMNI_CHECK_INPUT(w != nullptr && without_leading_ones(ck.info(e.diff).shape) == without_leading_ones(w->shape),
                         where, ": '", e.diff, "' ", dims_str(ck.info(e.diff).shape), " does not fit ", component,
                         " parameter '", weight, "' ", w ? dims_str(w->shape) : "(none)",
                         w ? kind_hint(module, ck.info(e.diff).shape, w->shape) : "", " (", docs::kLoraDoesNotFit, ")");
        updates_[weight].push_back({&ck, "", "", e.diff, src.scale});
        shapes_[weight] = w->shape;
      }
      if (!e.diff_b.empty()) {
        const std::string bias = module + ".bias";
        const ParamRef* bp = by_name.count(bias) ? by_name.at(bias) : nullptr;
        OMNI_CHECK_INPUT(bp != nullptr && ck.info(e.diff_b).shape == bp->shape, where, ": '", e.diff_b, "' ",
                         dims_str(ck.info(e.diff_b).shape), " does not fit ", component, " parameter '", bias, "' ",
                         bp ? dims_str(bp->shape) : "(none)",
                         bp ? kind_hint(module, ck.info(e.diff_b).shape, bp->shape) : "");
        updates_[bias].push_back({&ck, "", "", e.diff_b, src.scale});
        shapes_[bias] = bp->shape;
      }
      ++modules_updated;
    }
    if (!unknown.empty()) {
      std::string body = unknown.front();
      for (const char* prefix :
           {"lora_unet_", "model.diffusion_model.", "diffusion_model.", "transformer.", "base_model.model."})
        if (body.rfind(prefix, 0) == 0) body = body.substr(std::string(prefix).size());
      for (const auto& [suffix, p] : suffixes())
        if (ends_with(body, suffix)) body.resize(body.size() - suffix.size());
      std::string close;
      for (const auto& n : closest_names(body, known, 3)) close += (close.empty() ? "" : ", ") + n;
      OMNI_FAIL_INPUT(where, ": ", unknown.size(), " key(s) name no module of ", component, ", first '",
                      unknown.front(), "'; closest modules: ", close, " (", docs::kLoraDoesNotFit, ")");
    }
    // Wan2.1 image-conditioning keys: skipped with one warning per file, or an error under --lora-strict.
    if (!image_keys.empty()) {
      std::string kinds;
      for (const auto& k : image_kinds) kinds += (kinds.empty() ? "" : ", ") + k;
      if (strict)
        OMNI_FAIL_INPUT(where, ": key '", image_keys.front(), "' names a Wan2.1 image-conditioning module (", kinds,
                        ") that ", component, " lacks; without --lora-strict such keys are skipped with a warning");
      log::write_rank0(log::Level::kWarn, str_cat(where, ": skipping ", image_keys.size(),
                                                  " key(s) of Wan2.1 image-conditioning modules (", kinds, ") that ",
                                                  component, " lacks (--lora-strict makes this an error)"));
    }
    files_.push_back({path, src.scale, modules_updated});
    OMNI_DEBUG(flag, " ", path, ": ", modules_updated, " modules of ", component, ", scale ", src.scale);
  }
}

LoraSet::~LoraSet() = default;
LoraSet::LoraSet(LoraSet&&) noexcept = default;

void LoraSet::add_to(const std::string& param, int64_t begin, at::Tensor& values) const {
  auto it = updates_.find(param);
  if (it == updates_.end()) return;
  const at::IntArrayRef shape(shapes_.at(param));
  const int64_t count = values.numel();
  const int64_t cols = shape.size() > 1 ? product(shape.slice(1)) : 1;  // elements per row of the parameter
  for (const auto& u : it->second) {
    if (!u.full.empty()) {
      values.add_(u.file->read_range(u.full, begin, count, at::kFloat), u.factor);
      continue;
    }
    // Only the rows [r0, r1) of the update cover the range: B's rows times A.
    const int64_t rank = u.file->info(u.down).shape[0];
    const int64_t r0 = begin / cols, r1 = (begin + count + cols - 1) / cols;
    const at::Tensor a = u.file->read(u.down, at::kFloat).reshape({rank, cols});  // [rank, cols]
    const at::Tensor b = u.file->read_range(u.up, r0 * rank, (r1 - r0) * rank, at::kFloat).reshape({r1 - r0, rank});
    const at::Tensor delta = at::matmul(b, a).reshape({-1});  // [(r1 - r0) * cols]
    values.add_(delta.narrow(0, begin - r0 * cols, count), u.factor);
  }
}

}  // namespace omni::models
