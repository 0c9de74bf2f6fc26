#include "models/wan_vae_bands.h"

#include "core/error.h"

namespace omni::models {
namespace {

thread_local const VaeBands* g_current = nullptr;

}  // namespace

VaeBands::VaeBands(dist::ProcessGroup* group, int64_t latent_rows) : group_(group), index_(group->rank()) {
  const int n = group->size();
  OMNI_CHECK_USAGE(latent_rows >= n, "--vae-parallel: ", n, " ranks cannot split ", latent_rows,
                   " latent rows (at least one each); use fewer ranks per data-parallel group or a larger height");
  for (int r = 0; r < n; ++r) rows_.push_back(latent_rows / n + (r < latent_rows % n ? 1 : 0));
}

int64_t VaeBands::latent_begin(int band) const {
  int64_t begin = 0;
  for (int r = 0; r < band; ++r) begin += rows_[static_cast<size_t>(r)];
  return begin;
}

std::vector<int64_t> VaeBands::rows_at(const at::Tensor& x, int64_t h_dim) const {
  const int64_t mine = rows_[static_cast<size_t>(index_)];
  OMNI_CHECK(x.size(h_dim) % mine == 0, "VAE band of ", x.size(h_dim), " rows is not a multiple of its ", mine,
             " latent rows");
  const int64_t scale = x.size(h_dim) / mine;
  std::vector<int64_t> out;
  for (int64_t r : rows_) out.push_back(r * scale);
  return out;
}

at::Tensor VaeBands::with_halo(const at::Tensor& x, int64_t h_dim, int64_t pad) const {
  const int64_t h = x.size(h_dim);
  OMNI_CHECK(h >= pad, "VAE band of ", h, " rows is thinner than the ", pad, "-row halo");
  // Every band's first and last `pad` rows to every rank: [2, ...] each, [count, 2, ...] gathered.
  at::Tensor edges = at::stack({x.narrow(h_dim, 0, pad), x.narrow(h_dim, h - pad, pad)}).contiguous();
  at::Tensor all = at::empty({count() * edges.numel()}, edges.options());
  group_->all_gather_into_flat(all, edges.view({-1}))->wait();
  std::vector<int64_t> shape{count()};
  for (int64_t d : edges.sizes()) shape.push_back(d);
  all = all.view(shape);                                                        // [count, 2, ...]
  at::Tensor top = index_ > 0 ? all[index_ - 1][1] : at::zeros_like(edges[0]);  // the band above's last rows
  at::Tensor bottom = index_ + 1 < count() ? all[index_ + 1][0] : at::zeros_like(edges[0]);  // the band below's first
  return at::cat({top, x, bottom}, h_dim);
}

at::Tensor VaeBands::all_rows(const at::Tensor& x, int64_t h_dim) const {
  const std::vector<int64_t> rows = rows_at(x, h_dim);
  const int64_t per_row = x.numel() / x.size(h_dim);
  std::vector<int64_t> counts;
  for (int64_t r : rows) counts.push_back(r * per_row);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  at::Tensor flat = at::empty({total}, x.options());
  group_->all_gather_v(flat, x.contiguous().view({-1}), counts)->wait();
  std::vector<at::Tensor> parts;
  int64_t offset = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape[static_cast<size_t>(h_dim)] = rows[r];
    parts.push_back(flat.narrow(0, offset, counts[r]).view(shape));
    offset += counts[r];
  }
  return at::cat(parts, h_dim);
}

at::Tensor VaeBands::own_rows(const at::Tensor& full, int64_t h_dim) const {
  const int64_t total_latent = latent_begin(count());
  OMNI_CHECK(full.size(h_dim) % total_latent == 0, "VAE frame of ", full.size(h_dim), " rows is not a multiple of ",
             total_latent, " latent rows");
  const int64_t scale = full.size(h_dim) / total_latent;
  return full.narrow(h_dim, latent_begin(index_) * scale, rows_[static_cast<size_t>(index_)] * scale);
}

at::Tensor VaeBands::gather_rows(const at::Tensor& band, int64_t h_dim, int root) const {
  const std::vector<int64_t> rows = rows_at(band, h_dim);
  // Rows first, so that the bands received one after the other are the whole tensor with no copy to join them.
  const at::Tensor send_band = band.movedim(h_dim, 0).contiguous();  // [Hb, ...]
  const int64_t per_row = band.numel() / band.size(h_dim);
  // A gather to `root` as an all-to-all in which only `root` receives: the other ranks never hold the whole.
  std::vector<int64_t> send(static_cast<size_t>(count()), 0), recv(static_cast<size_t>(count()), 0);
  send[static_cast<size_t>(root)] = band.numel();
  int64_t total_rows = 0;
  if (index_ == root) {
    for (int r = 0; r < count(); ++r) {
      recv[static_cast<size_t>(r)] = rows[static_cast<size_t>(r)] * per_row;
      total_rows += rows[static_cast<size_t>(r)];
    }
  }
  at::Tensor flat = at::empty({total_rows * per_row}, band.options());
  group_->all_to_all_v(flat, send_band.view({-1}), send, recv)->wait();
  if (index_ != root) return at::Tensor();
  std::vector<int64_t> shape(send_band.sizes().begin(), send_band.sizes().end());
  shape[0] = total_rows;
  return flat.view(shape).movedim(0, h_dim);  // a view: rows back in place
}

const VaeBands* current_vae_bands() {
  return g_current;
}

ScopedVaeBands::ScopedVaeBands(const VaeBands* bands) : previous_(g_current) {
  g_current = bands;
}

ScopedVaeBands::~ScopedVaeBands() {
  g_current = previous_;
}

}  // namespace omni::models
