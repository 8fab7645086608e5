// Input generation, output buffers with canaries, and DLPack views.
#include "harness/tensors.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace kblaster::harness {
namespace {

// Elements after each output that the candidate must not touch: enough to catch an
// off-by-a-block write, small enough to cost nothing.
constexpr std::int64_t canary_bytes = 4096;


std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the saved tensor");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A raw .bin file (a capture's memory), read as the spec's shape and dtype; the task reader
// checked that the sizes add up, and this checks again, since the file may have changed since.
torch::Tensor load_raw(const engine::input_spec& in, torch::ScalarType type) {
  const auto bytes = read_bytes(in.file);
  auto t = torch::empty(in.shape, torch::TensorOptions().dtype(type));
  if (static_cast<std::size_t>(t.nbytes()) != bytes.size())
    throw std::runtime_error(in.file + ": holds " + std::to_string(bytes.size()) + " bytes, the input needs " +
                             std::to_string(t.nbytes()));
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

torch::Tensor load_saved(const std::string& path) {
  const auto bytes = read_bytes(path);
  auto value = torch::pickle_load(bytes);
  if (!value.isTensor()) throw std::runtime_error(path + ": does not hold one tensor (torch.save(tensor, path))");
  return value.toTensor();
}

}  // namespace

torch::ScalarType scalar_type(const std::string& d) {
  if (d == "float32") return torch::kFloat32;
  if (d == "float16") return torch::kFloat16;
  if (d == "bfloat16") return torch::kBFloat16;
  if (d == "float64") return torch::kFloat64;
  if (d == "int32") return torch::kInt32;
  if (d == "int64") return torch::kInt64;
  if (d == "uint8") return torch::kUInt8;
  if (d == "bool") return torch::kBool;
  throw std::runtime_error("unknown dtype '" + d + "'");
}

std::string dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return "float32";
    case torch::kFloat16: return "float16";
    case torch::kBFloat16: return "bfloat16";
    case torch::kFloat64: return "float64";
    case torch::kInt32: return "int32";
    case torch::kInt64: return "int64";
    case torch::kUInt8: return "uint8";
    case torch::kBool: return "bool";
    default: return c10::toString(t);
  }
}

namespace {

// On the GPU every input is drawn where it will live, in its own dtype, from the device's
// generator seeded per input: drawing on the CPU in float64 cost 0.12 s per 2^22 floats, a quarter
// of a second per seed of vector_add and a third of a candidate's whole verification (an H100
// trace), and minutes per seed at KernelBench's sizes. The CPU path draws on the CPU, in float64.

torch::Tensor draw(const engine::input_spec& in, at::Generator& gen, const torch::TensorOptions& opts) {
  return draw_values(in, in.shape, gen, opts);
}

}  // namespace

torch::Tensor canary_pattern(const torch::Tensor& t) {
  // A recognisable value in every representable dtype: -123 for signed, 0xA5 bytes otherwise.
  if (t.scalar_type() == torch::kBool) return t.fill_(true);
  if (t.scalar_type() == torch::kUInt8) return t.fill_(0xA5);
  return t.fill_(-123);
}

torch::Tensor poison_value(torch::Tensor t) {
  if (t.is_floating_point()) return t.fill_(std::numeric_limits<double>::quiet_NaN());
  if (t.scalar_type() == torch::kBool) return t.fill_(true);
  if (t.scalar_type() == torch::kUInt8) return t.fill_(0x5A);
  return t.fill_(-0x5A5A5A5A);
}

bool is_random_init(const engine::input_spec& in) {
  return in.file.empty() && (in.init == "randn" || in.init == "uniform" || in.init == "randint");
}

torch::Tensor draw_values(const engine::input_spec& in, c10::IntArrayRef shape, at::Generator& gen,
                          const torch::TensorOptions& opts) {
  if (in.init == "randn") return at::randn(shape, gen, opts).mul_(in.scale);
  if (in.init == "uniform") return at::rand(shape, gen, opts).mul_(in.high - in.low).add_(in.low).mul_(in.scale);
  if (in.init == "zeros") return torch::zeros(shape, opts);
  if (in.init == "ones") return torch::ones(shape, opts);
  if (in.init == "arange") return torch::arange(static_cast<double>(c10::multiply_integers(shape)), opts).reshape(shape);
  if (in.init == "randint")
    return at::randint(static_cast<std::int64_t>(in.low), static_cast<std::int64_t>(in.high), shape, gen, opts);
  throw std::runtime_error("unknown init '" + in.init + "'");
}

std::vector<torch::Tensor> make_inputs(const engine::task_spec& task, std::uint64_t seed, torch::Device device) {
  torch::NoGradGuard no_grad;
  auto host_gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<torch::Tensor> out;
  for (const auto& in : task.inputs) {
    torch::Tensor t;
    const auto type = scalar_type(in.dtype);
    if (!in.file.empty()) {
      t = engine::is_raw_tensor_file(in.file) ? load_raw(in, type) : load_saved(in.file).to(type);
    } else if (device.is_cuda()) {
      // The device's default generator: the harness runs one request at a time.
      auto gen = at::globalContext().defaultGenerator(device);
      {
        // Only while seeding: the draw below takes the generator's lock itself.
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_current_seed(seed + out.size());
      }
      const bool floating = c10::isFloatingType(type);
      t = draw(in, gen, torch::TensorOptions().dtype(floating ? type : torch::kFloat32).device(device));
      if (!floating) t = t.to(type);
      out.push_back(t.contiguous());
      continue;
    } else {
      t = draw(in, host_gen, torch::TensorOptions().dtype(torch::kFloat64)).to(type);
    }
    out.push_back(t.to(device).contiguous());
  }
  return out;
}

void output_buffers::poison() {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    poison_value(outputs[i]);
    canary_pattern(storage[i].narrow(0, outputs[i].numel(), canary_elems[i]));
  }
}

int output_buffers::damaged_canary() const {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    auto tail = storage[i].narrow(0, outputs[i].numel(), canary_elems[i]);
    auto expected = canary_pattern(torch::empty_like(tail));
    if (!same_bits(tail, expected)) return static_cast<int>(i);
  }
  return -1;
}

std::int64_t canary_elements(const torch::Tensor& like) {
  return std::max<std::int64_t>(1, canary_bytes / static_cast<std::int64_t>(like.element_size()));
}

output_buffers outputs_over(std::vector<torch::Tensor> storage, const std::vector<torch::Tensor>& like) {
  output_buffers b;
  for (std::size_t i = 0; i < like.size(); ++i) {
    const auto& r = like[i];
    b.outputs.push_back(storage[i].narrow(0, 0, r.numel()).view(r.sizes()));
    b.canary_elems.push_back(canary_elements(r));
  }
  b.storage = std::move(storage);
  b.poison();
  return b;
}

output_buffers make_outputs(const std::vector<torch::Tensor>& like) {
  std::vector<torch::Tensor> storage;
  for (const auto& r : like) storage.push_back(torch::empty({r.numel() + canary_elements(r)}, r.options()));
  return outputs_over(std::move(storage), like);
}

DLDataType dl_dtype(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return {kDLFloat, 32, 1};
    case torch::kFloat16: return {kDLFloat, 16, 1};
    case torch::kBFloat16: return {kDLBfloat, 16, 1};
    case torch::kFloat64: return {kDLFloat, 64, 1};
    case torch::kInt32: return {kDLInt, 32, 1};
    case torch::kInt64: return {kDLInt, 64, 1};
    case torch::kUInt8: return {kDLUInt, 8, 1};
    case torch::kBool: return {kDLUInt, 8, 1};  // DLPack 0.6 has no bool; bytes of 0/1
    default: throw std::runtime_error("dtype " + std::string(c10::toString(t)) + " cannot cross the kb_forward ABI");
  }
}

dl_views::dl_views(const std::vector<torch::Tensor>& tensors) {
  shapes_.reserve(tensors.size());
  strides_.reserve(tensors.size());
  for (const auto& t : tensors) {
    shapes_.emplace_back(t.sizes().begin(), t.sizes().end());
    strides_.emplace_back(t.strides().begin(), t.strides().end());
    DLTensor v{};
    v.data = t.data_ptr();
    v.device = t.is_cuda() ? DLDevice{kDLCUDA, static_cast<std::int32_t>(t.get_device())} : DLDevice{kDLCPU, 0};
    v.ndim = static_cast<std::int32_t>(t.dim());
    v.dtype = dl_dtype(t.scalar_type());
    v.shape = shapes_.back().data();
    v.strides = strides_.back().data();
    v.byte_offset = 0;
    views_.push_back(v);
  }
  original_ = views_;
  shape_copies_ = shapes_;
  stride_copies_ = strides_;
}

int dl_views::changed() const {
  for (std::size_t i = 0; i < views_.size(); ++i) {
    const auto& a = views_[i];
    const auto& b = original_[i];
    if (a.data != b.data || a.ndim != b.ndim || a.shape != b.shape || a.strides != b.strides ||
        a.byte_offset != b.byte_offset || a.dtype.code != b.dtype.code || a.dtype.bits != b.dtype.bits ||
        a.device.device_type != b.device.device_type)
      return static_cast<int>(i);
    // The arrays the descriptors point to are ours too.
    if (shapes_[i] != shape_copies_[i] || strides_[i] != stride_copies_[i]) return static_cast<int>(i);
  }
  return -1;
}

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (a.device() != b.device()) return same_bits(a.cpu(), b.cpu());
  // Compared as bytes where the tensors live: a host copy of a large output costs seconds, and
  // a float comparison would call NaN unequal to itself. In chunks: torch::equal makes a bool
  // per element compared, which for a 6 GB output is 6 GB more that the caching allocator
  // then keeps.
  constexpr std::int64_t chunk = std::int64_t{1} << 26;
  const auto bytes = [](const torch::Tensor& t) { return t.contiguous().reshape({-1}).view(torch::kUInt8); };
  const auto x = bytes(a), y = bytes(b);
  for (std::int64_t start = 0; start < x.numel(); start += chunk) {
    const auto n = std::min(chunk, x.numel() - start);
    if (!torch::equal(x.narrow(0, start, n), y.narrow(0, start, n))) return false;
  }
  return true;
}

bool overlaps(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.device() != b.device() || a.numel() == 0 || b.numel() == 0) return false;
  const auto* a0 = static_cast<const char*>(a.data_ptr());
  const auto* b0 = static_cast<const char*>(b.data_ptr());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

}  // namespace kblaster::harness
