// Channel concat/split of NCHW tensors (see channel_concat.h): one copy_rows per part, a row
// being one image's block of C_i * H * W elements.
#include "channel_concat.h"

#include <loom/base/error.h>

#include "strided_copy.h"

namespace loom::detail {

Tensor concat_channels(const std::vector<Tensor>& parts) {
  LOOM_CHECK(!parts.empty(), "concat_channels: no tensors");
  const Tensor& first = parts[0];
  LOOM_CHECK(first.rank() == 4, "concat_channels: ", first.shape().str(), " is not [N, C, H, W]");
  std::int64_t total = 0;
  for (const Tensor& p : parts) {
    LOOM_CHECK(p.rank() == 4 && p.size(0) == first.size(0) && p.size(2) == first.size(2) &&
                   p.size(3) == first.size(3),
               "concat_channels: ", p.shape().str(), " does not match ", first.shape().str(), " outside dim 1");
    total += p.size(1);
  }
  const std::int64_t plane = first.size(2) * first.size(3), batch = first.size(0);
  Tensor out = Tensor::empty({batch, total, first.size(2), first.size(3)}, first.dtype(), first.device());
  std::int64_t offset = 0;
  for (const Tensor& p : parts) {
    const std::int64_t width = p.size(1) * plane;
    copy_rows(p, 0, width, out, offset, total * plane, batch, width);
    offset += width;
  }
  return out;
}

std::vector<Tensor> split_channels(const Tensor& x, const std::vector<std::int64_t>& channels) {
  LOOM_CHECK(x.rank() == 4, "split_channels: ", x.shape().str(), " is not [N, C, H, W]");
  std::int64_t total = 0;
  for (const std::int64_t c : channels) total += c;
  LOOM_CHECK(total == x.size(1), "split_channels: parts of ", total, " channels from ", x.shape().str());
  const std::int64_t plane = x.size(2) * x.size(3), batch = x.size(0);
  std::vector<Tensor> parts;
  std::int64_t offset = 0;
  for (const std::int64_t c : channels) {
    Tensor part = Tensor::empty({batch, c, x.size(2), x.size(3)}, x.dtype(), x.device());
    copy_rows(x, offset, total * plane, part, 0, c * plane, batch, c * plane);
    offset += c * plane;
    parts.push_back(part);
  }
  return parts;
}

}  // namespace loom::detail
