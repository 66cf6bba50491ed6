#include "vision/ops/roi_align.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "vision/ops/roi_align_sampling.h"
#include "vectorize/vectorized_loop.h"

#if DTRAIN_TORCH_CUDA
#include "vision/ops/cuda/current_stream.h"
#include "vision/ops/cuda/detection_kernels.h"
#endif

namespace dtrain::vision::ops {
namespace {

// Calls visit(sample) for every sample of bin (ph, pw) of the roi `g`.
template <typename T, typename Visit>
void for_each_sample(const RoiGeometry<T>& g, int64_t ph, int64_t pw, int64_t height, int64_t width, Visit&& visit) {
  for (int64_t iy = 0; iy < g.grid_h; ++iy) {
    const T y = g.sample_y(ph, iy);
    for (int64_t ix = 0; ix < g.grid_w; ++ix) visit(bilinear_sample<T>(height, width, y, g.sample_x(pw, ix)));
  }
}

void check_rois(const at::Tensor& rois, const at::Tensor& features, const char* op) {
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 5, op,
              ": rois must be [K, 5] rows of (batch_index, x1, y1, x2, y2), got ", rois.sizes());
  TORCH_CHECK(rois.device() == features.device(), op, ": rois are on ", rois.device(), " but the features on ",
              features.device());
#if DTRAIN_TORCH_CUDA
  TORCH_CHECK(features.device().is_cpu() || features.device().is_cuda(), op, ": CPU or CUDA tensors only, got ",
              features.device());
#else
  TORCH_CHECK(features.device().is_cpu(), op,
              ": only CPU tensors are supported in this build (CUDA needs a "
              "LibTorch with CUDA), got ",
              features.device());
#endif
  TORCH_CHECK(rois.scalar_type() == features.scalar_type(), op, ": rois are ", rois.scalar_type(),
              " but the features are ", features.scalar_type());
}

void check_pooling(int64_t pooled_height, int64_t pooled_width, const char* op) {
  TORCH_CHECK(pooled_height > 0 && pooled_width > 0, op, ": pooled size must be positive, got ", pooled_height, "x",
              pooled_width);
}

template <typename T>
void check_batch_index(const RoiGeometry<T>& g, int64_t batch, int64_t k) {
  TORCH_CHECK(g.batch_index >= 0 && g.batch_index < batch, "roi_align: roi ", k, " has batch index ", g.batch_index,
              " outside [0, ", batch, ")");
}

// Every bilinear sample of every roi, computed once and shared by all
// channels (the geometry does not depend on the channel): roi k's samples
// are samples[first[k] .. first[k + 1]), bin-major then sample-major.
template <typename T>
struct RoiSamples {
  std::vector<BilinearSample<T>> samples;
  std::vector<int64_t> first;
  std::vector<RoiGeometry<T>> geometry;
};

template <typename T>
RoiSamples<T> precompute_samples(const T* roi, int64_t num_rois, int64_t batch, int64_t height, int64_t width,
                                 double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                 int64_t sampling_ratio, bool aligned) {
  RoiSamples<T> out;
  out.first.assign(num_rois + 1, 0);
  for (int64_t k = 0; k < num_rois; ++k) {
    out.geometry.emplace_back(roi + 5 * k, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
    check_batch_index(out.geometry.back(), batch, k);
    out.first[k + 1] =
        out.first[k] + pooled_height * pooled_width * out.geometry.back().grid_h * out.geometry.back().grid_w;
  }
  out.samples.resize(static_cast<size_t>(out.first[num_rois]));
  at::parallel_for(0, num_rois, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      BilinearSample<T>* next = out.samples.data() + out.first[k];
      for (int64_t ph = 0; ph < pooled_height; ++ph) {
        for (int64_t pw = 0; pw < pooled_width; ++pw) {
          for_each_sample(out.geometry[k], ph, pw, height, width, [&](const BilinearSample<T>& s) { *next++ = s; });
        }
      }
    }
  });
  return out;
}

template <typename T>
void forward_kernel(const at::Tensor& input, const at::Tensor& rois, at::Tensor& output, double spatial_scale,
                    int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
  const int64_t channels = input.size(1);
  const int64_t height = input.size(2);
  const int64_t width = input.size(3);
  const T* in = input.data_ptr<T>();
  T* out = output.data_ptr<T>();
  const int64_t num_rois = rois.size(0);
  const RoiSamples<T> plan = precompute_samples<T>(rois.data_ptr<T>(), num_rois, input.size(0), height, width,
                                                   spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
  const int64_t bins = pooled_height * pooled_width;
  at::parallel_for(0, num_rois * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t kc = begin; kc < end; ++kc) {
      const int64_t k = kc / channels;
      const int64_t c = kc % channels;
      const RoiGeometry<T>& g = plan.geometry[k];
      const int64_t per_bin = g.grid_h * g.grid_w;
      const T* plane = in + (g.batch_index * channels + c) * height * width;
      const BilinearSample<T>* s = plan.samples.data() + plan.first[k];
      T* out_plane = out + kc * bins;
      for (int64_t bin = 0; bin < bins; ++bin) {
        T sum = 0;
        for (int64_t i = 0; i < per_bin; ++i, ++s) {
          // The four products summed first, then accumulated: torchvision's
          // order, so that results agree to the last bit.
          sum += s->weights[0] * plane[s->offsets[0]] + s->weights[1] * plane[s->offsets[1]] +
                 s->weights[2] * plane[s->offsets[2]] + s->weights[3] * plane[s->offsets[3]];
        }
        out_plane[bin] = sum / g.count;
      }
    }
  });
}

template <typename T>
void backward_kernel(const at::Tensor& grad_output, const at::Tensor& rois, at::Tensor& grad_input,
                     double spatial_scale, int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                     bool aligned) {
  const int64_t channels = grad_input.size(1);
  const int64_t height = grad_input.size(2);
  const int64_t width = grad_input.size(3);
  const T* go = grad_output.data_ptr<T>();
  T* gi = grad_input.data_ptr<T>();
  const int64_t num_rois = rois.size(0);
  const RoiSamples<T> plan = precompute_samples<T>(rois.data_ptr<T>(), num_rois, grad_input.size(0), height, width,
                                                   spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
  const int64_t bins = pooled_height * pooled_width;
  // Different rois may scatter into the same input plane, so work is split by
  // channel: a channel's planes are written by one thread only.
  at::parallel_for(0, channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      for (int64_t k = 0; k < num_rois; ++k) {
        const RoiGeometry<T>& g = plan.geometry[k];
        const int64_t per_bin = g.grid_h * g.grid_w;
        T* plane = gi + (g.batch_index * channels + c) * height * width;
        const T* go_plane = go + (k * channels + c) * bins;
        const BilinearSample<T>* s = plan.samples.data() + plan.first[k];
        for (int64_t bin = 0; bin < bins; ++bin) {
          const T grad = go_plane[bin];
          for (int64_t i = 0; i < per_bin; ++i, ++s) {
            // (grad * weight) / count, in torchvision's order.
            for (int q = 0; q < 4; ++q) plane[s->offsets[q]] += grad * s->weights[q] / g.count;
          }
        }
      }
    }
  });
}

class RoiAlignFunction : public torch::autograd::Function<RoiAlignFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                                                const at::Tensor& rois, double spatial_scale, int64_t pooled_height,
                                                int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
    ctx->saved_data["spatial_scale"] = spatial_scale;
    ctx->saved_data["pooled_height"] = pooled_height;
    ctx->saved_data["pooled_width"] = pooled_width;
    ctx->saved_data["sampling_ratio"] = sampling_ratio;
    ctx->saved_data["aligned"] = aligned;
    ctx->saved_data["input_shape"] = input.sizes();
    ctx->save_for_backward({rois});
    return {roi_align_forward(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor rois = ctx->get_saved_variables()[0];
    const auto shape = ctx->saved_data["input_shape"].toIntVector();
    const at::Tensor grad_input = roi_align_backward(
        grad_outputs[0], rois, ctx->saved_data["spatial_scale"].toDouble(), ctx->saved_data["pooled_height"].toInt(),
        ctx->saved_data["pooled_width"].toInt(), shape[0], shape[1], shape[2], shape[3],
        ctx->saved_data["sampling_ratio"].toInt(), ctx->saved_data["aligned"].toBool());
    // One entry per forward argument; only the input has a gradient.
    return {grad_input, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// From this many channels the features are read channels-last: one
// transposing copy, after which every sample is applied to a pixel's
// contiguous channel vector (a vectorised loop) instead of gathering one
// value per channel plane. Each output and gradient element still sums the
// same terms in the same order, so both layouts give identical results.
constexpr int64_t kChannelsLastFrom = 16;

// One bin of one roi: acc[c] (C channels) summed over the bin's samples `s`, each the
// weighted sum of its four neighbours' channel vectors in `image` ([H, W, C]).
template <typename T>
DTRAIN_VECTORIZED_LOOP void sum_bin_samples(T* __restrict acc, const T* __restrict image, const BilinearSample<T>* s,
                                            int64_t per_bin, int64_t channels) {
  for (int64_t i = 0; i < per_bin; ++i, ++s) {
    const T* p0 = image + s->offsets[0] * channels;
    const T* p1 = image + s->offsets[1] * channels;
    const T* p2 = image + s->offsets[2] * channels;
    const T* p3 = image + s->offsets[3] * channels;
    const T w0 = s->weights[0], w1 = s->weights[1], w2 = s->weights[2], w3 = s->weights[3];
    for (int64_t c = 0; c < channels; ++c) acc[c] += w0 * p0[c] + w1 * p1[c] + w2 * p2[c] + w3 * p3[c];
  }
}

template <typename T>
void forward_kernel_channels_last(const at::Tensor& input_cl, const RoiSamples<T>& plan, at::Tensor& output,
                                  int64_t channels, int64_t height, int64_t width, int64_t bins) {
  const T* in = input_cl.data_ptr<T>();  // [N, H, W, C] in memory
  T* out = output.data_ptr<T>();
  const auto num_rois = static_cast<int64_t>(plan.geometry.size());
  at::parallel_for(0, num_rois, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> acc(static_cast<size_t>(channels));
    for (int64_t k = begin; k < end; ++k) {
      const RoiGeometry<T>& g = plan.geometry[k];
      const int64_t per_bin = g.grid_h * g.grid_w;
      const T* image = in + g.batch_index * height * width * channels;
      const BilinearSample<T>* s = plan.samples.data() + plan.first[k];
      T* out_roi = out + k * channels * bins;
      for (int64_t bin = 0; bin < bins; ++bin) {
        std::fill(acc.begin(), acc.end(), static_cast<T>(0));
        sum_bin_samples<T>(acc.data(), image, s, per_bin, channels);
        s += per_bin;
        for (int64_t c = 0; c < channels; ++c) out_roi[c * bins + bin] = acc[c] / g.count;
      }
    }
  });
}

// Channels [c0, c1) of one roi's gradient `grad` ([bins, C]) scattered into its image's
// gradient ([H, W, C]) at the roi's samples `s`. Each term is torchvision's grad * w / count,
// a division between the product and the sum, so every instruction set adds the same bits.
template <typename T>
DTRAIN_VECTORIZED_LOOP void scatter_roi_gradient(T* __restrict image, const T* __restrict grad,
                                                 const BilinearSample<T>* s, int64_t bins, int64_t per_bin,
                                                 int64_t channels, int64_t c0, int64_t c1, T count) {
  for (int64_t bin = 0; bin < bins; ++bin, grad += channels) {
    for (int64_t i = 0; i < per_bin; ++i, ++s) {
      for (int q = 0; q < 4; ++q) {
        T* p = image + s->offsets[q] * channels;
        const T w = s->weights[q];
        for (int64_t c = c0; c < c1; ++c) p[c] += grad[c] * w / count;
      }
    }
  }
}

template <typename T>
void backward_kernel_channels_last(const at::Tensor& grad_kbc, const RoiSamples<T>& plan, at::Tensor& grad_cl,
                                   int64_t channels, int64_t height, int64_t width, int64_t bins) {
  const T* go = grad_kbc.data_ptr<T>();  // [K, bins, C]
  T* gi = grad_cl.data_ptr<T>();         // [N, H, W, C] in memory
  const auto num_rois = static_cast<int64_t>(plan.geometry.size());
  // Threads own disjoint channel ranges, so their scatters never collide.
  at::parallel_for(0, channels, 16, [&](int64_t c0, int64_t c1) {
    for (int64_t k = 0; k < num_rois; ++k) {
      const RoiGeometry<T>& g = plan.geometry[k];
      scatter_roi_gradient<T>(gi + g.batch_index * height * width * channels, go + k * bins * channels,
                              plan.samples.data() + plan.first[k], bins, g.grid_h * g.grid_w, channels, c0, c1,
                              g.count);
    }
  });
}

}  // namespace

at::Tensor roi_align_forward(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                             int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
  TORCH_CHECK(input.dim() == 4, "roi_align: input must be [N, C, H, W], got ", input.sizes());
  check_rois(rois, input, "roi_align");
  check_pooling(pooled_height, pooled_width, "roi_align");
  at::Tensor output = at::zeros({rois.size(0), input.size(1), pooled_height, pooled_width}, input.options());
  if (output.numel() == 0) return output;
  const at::Tensor in = input.contiguous();
  const at::Tensor r = rois.contiguous();
#if DTRAIN_TORCH_CUDA
  if (input.is_cuda()) {
    const cuda::RoiAlignShape shape{r.size(0),     input.size(0), input.size(1), input.size(2),  input.size(3),
                                    pooled_height, pooled_width,  spatial_scale, sampling_ratio, aligned};
    AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "dtrain_roi_align_forward_cuda", [&] {
      cuda::roi_align_forward<scalar_t>(in.data_ptr<scalar_t>(), r.data_ptr<scalar_t>(), output.data_ptr<scalar_t>(),
                                        shape, cuda::current_stream());
    });
    return output;
  }
#endif
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "dtrain_roi_align_forward", [&] {
    if (input.size(1) < kChannelsLastFrom) {
      forward_kernel<scalar_t>(in, r, output, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
      return;
    }
    const RoiSamples<scalar_t> plan =
        precompute_samples<scalar_t>(r.data_ptr<scalar_t>(), r.size(0), input.size(0), input.size(2), input.size(3),
                                     spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
    const at::Tensor channels_last = input.permute({0, 2, 3, 1}).contiguous();
    forward_kernel_channels_last<scalar_t>(channels_last, plan, output, input.size(1), input.size(2), input.size(3),
                                           pooled_height * pooled_width);
  });
  return output;
}

at::Tensor roi_align_backward(const at::Tensor& grad_output, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t batch, int64_t channels,
                              int64_t height, int64_t width, int64_t sampling_ratio, bool aligned) {
  check_rois(rois, grad_output, "roi_align_backward");
  check_pooling(pooled_height, pooled_width, "roi_align_backward");
  TORCH_CHECK(grad_output.dim() == 4 && grad_output.size(0) == rois.size(0) && grad_output.size(1) == channels &&
                  grad_output.size(2) == pooled_height && grad_output.size(3) == pooled_width,
              "roi_align_backward: grad_output must be [", rois.size(0), ", ", channels, ", ", pooled_height, ", ",
              pooled_width, "], got ", grad_output.sizes());
  if (grad_output.numel() == 0) return at::zeros({batch, channels, height, width}, grad_output.options());
  const at::Tensor go = grad_output.contiguous();
  const at::Tensor r = rois.contiguous();
#if DTRAIN_TORCH_CUDA
  if (grad_output.is_cuda()) {
    at::Tensor grad_input = at::zeros({batch, channels, height, width}, grad_output.options());
    const cuda::RoiAlignShape shape{r.size(0),     batch,        channels,      height,         width,
                                    pooled_height, pooled_width, spatial_scale, sampling_ratio, aligned};
    AT_DISPATCH_FLOATING_TYPES(grad_output.scalar_type(), "dtrain_roi_align_backward_cuda", [&] {
      cuda::roi_align_backward<scalar_t>(go.data_ptr<scalar_t>(), r.data_ptr<scalar_t>(),
                                         grad_input.data_ptr<scalar_t>(), shape, cuda::current_stream());
    });
    return grad_input;
  }
#endif
  if (channels < kChannelsLastFrom) {
    at::Tensor grad_input = at::zeros({batch, channels, height, width}, grad_output.options());
    AT_DISPATCH_FLOATING_TYPES(grad_output.scalar_type(), "dtrain_roi_align_backward", [&] {
      backward_kernel<scalar_t>(go, r, grad_input, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
    });
    return grad_input;
  }
  at::Tensor grad_cl = at::zeros({batch, height, width, channels}, grad_output.options());
  const at::Tensor grad_kbc = go.view({go.size(0), channels, -1}).permute({0, 2, 1}).contiguous();
  AT_DISPATCH_FLOATING_TYPES(grad_output.scalar_type(), "dtrain_roi_align_backward", [&] {
    const RoiSamples<scalar_t> plan =
        precompute_samples<scalar_t>(r.data_ptr<scalar_t>(), r.size(0), batch, height, width, spatial_scale,
                                     pooled_height, pooled_width, sampling_ratio, aligned);
    backward_kernel_channels_last<scalar_t>(grad_kbc, plan, grad_cl, channels, height, width,
                                            pooled_height * pooled_width);
  });
  return grad_cl.permute({0, 3, 1, 2}).contiguous();
}

at::Tensor roi_align(const at::Tensor& input, const at::Tensor& rois, double spatial_scale, int64_t pooled_height,
                     int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
  // 16-bit features (a network under autocast) pool in float32 and return in their type,
  // as torchvision's autocast RoIAlign does: sums of many samples lose too much in 16 bits.
  if (input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16) {
    return roi_align(input.to(at::kFloat), rois.to(at::kFloat), spatial_scale, pooled_height, pooled_width,
                     sampling_ratio, aligned)
        .to(input.scalar_type());
  }
  return RoiAlignFunction::apply(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)[0];
}

}  // namespace dtrain::vision::ops
