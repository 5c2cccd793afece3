// The sparse contrastive encoder in the native core; see latent_encoder.h.
#include "latent_encoder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace latentchess::core {

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& problem) {
    throw std::invalid_argument("sparse encoder '" + source + "': " + problem);
}

std::int16_t quantise(float value, int scale) {
    const double scaled = std::round(static_cast<double>(value) * scale);  // half away from zero
    return static_cast<std::int16_t>(std::clamp(scaled, -32767.0, 32767.0));
}

// Most features one perspective can have active at once, per block (32 pieces: one feature each
// in the local blocks, at most one pair each in PH and PV; the mobility blocks: all of them).
int most_active_features(const FeatureSet& features) {
    int total = 0;
    for (const FeatureBlock block : features.blocks) {
        const bool mobility = block == FeatureBlock::MB || block == FeatureBlock::MC;
        // A threat block: a piece attacks at most 8 others (one per ray, or its 8 fixed targets).
        if (is_threat_block(block)) total += std::min(32 * 8, feature_block_size(block));
        else total += mobility ? feature_block_size(block) : 32;
    }
    return std::min(total, features.size);
}

// The first row of the set's threat block (its last block), the set's size without one.
int threat_rows_start(const FeatureSet& features) {
    return !features.blocks.empty() && is_threat_block(features.blocks.back()) ? features.offsets.back()
                                                                               : features.size;
}

// The largest of 1024, 512, 256 whose accumulators provably fit int16 (and a threat block's rows
// int8), else 127.
int automatic_scale(const LatentWeights& weights, const FeatureSet& features) {
    const auto n = static_cast<std::size_t>(features.size), width = static_cast<std::size_t>(weights.l1);
    const auto most = static_cast<std::size_t>(most_active_features(features));
    if (most == 0) return 1024;
    double bound = 0.0;
    std::vector<double> column(n);
    for (std::size_t c = 0; c < width; ++c) {
        for (std::size_t f = 0; f < n; ++f) column[f] = std::abs(static_cast<double>(weights.ft_weight[f * width + c]));
        std::nth_element(column.begin(), column.begin() + static_cast<long>(most - 1), column.end(),
                         std::greater<double>());
        double sum = std::abs(static_cast<double>(weights.ft_bias[c]));
        for (std::size_t k = 0; k < most; ++k) sum += column[k];
        bound = std::max(bound, sum);
    }
    // A threat block's rows are int8 (nnue.h): their largest |weight| must round into 127.
    double largest_threat = 0.0;
    for (std::size_t i = static_cast<std::size_t>(threat_rows_start(features)) * width; i < n * width; ++i)
        largest_threat = std::max(largest_threat, std::abs(static_cast<double>(weights.ft_weight[i])));
    for (const int scale : {1024, 512, 256}) {
        // each rounded term moves by at most 1/2
        if (bound * scale + 0.5 * static_cast<double>(most + 1) < 32767.0 &&
            largest_threat * scale < 127.5)
            return scale;
    }
    return 127;
}

void check_size(const std::vector<float>& values, std::size_t expected, const char* name,
                const std::string& source) {
    if (values.size() != expected) {
        fail(source, std::string(name) + " has " + std::to_string(values.size()) + " values, expected " +
                         std::to_string(expected));
    }
    for (const float value : values) {
        if (!std::isfinite(value)) fail(source, std::string(name) + " holds a non-finite value");
    }
}

// --- model.safetensors (float32 tensors only) ------------------------------------------------

struct TensorEntry {
    std::vector<long long> shape;
    std::size_t begin = 0, end = 0;
};

// The header object of tensor `name` ({"dtype":..., "shape":[...], "data_offsets":[...]}).
std::string entry_text(const std::string& header, const std::string& name, const std::string& file) {
    const std::size_t at = header.find("\"" + name + "\"");
    if (at == std::string::npos) fail(file, "missing tensor '" + name + "'");
    const std::size_t open = header.find('{', at);
    const std::size_t close = header.find('}', open);
    if (open == std::string::npos || close == std::string::npos) fail(file, "bad header");
    return header.substr(open, close - open + 1);
}

std::vector<long long> numbers_after(const std::string& text, const std::string& key,
                                     const std::string& file) {
    const std::size_t at = text.find("\"" + key + "\"");
    const std::size_t open = at == std::string::npos ? at : text.find('[', at);
    const std::size_t close = open == std::string::npos ? open : text.find(']', open);
    if (close == std::string::npos) fail(file, "bad or missing field '" + key + "'");
    std::vector<long long> out;
    std::size_t start = open + 1;
    while (start < close) {
        std::size_t comma = text.find(',', start);
        if (comma == std::string::npos || comma > close) comma = close;
        const std::string number = text.substr(start, comma - start);
        if (number.find_first_of("0123456789") != std::string::npos) {
            try {
                out.push_back(std::stoll(number));
            } catch (const std::logic_error&) {
                fail(file, "bad number in '" + key + "'");
            }
        }
        start = comma + 1;
    }
    return out;
}

std::vector<float> float_tensor(const std::string& header, const std::vector<char>& data,
                                const std::string& name, std::vector<long long>& shape,
                                const std::string& file) {
    const std::string text = entry_text(header, name, file);
    if (text.find("\"F32\"") == std::string::npos) fail(file, name + " is not float32 (F32)");
    shape = numbers_after(text, "shape", file);
    const auto offsets = numbers_after(text, "data_offsets", file);
    std::size_t count = 1;
    for (const long long extent : shape) {
        if (extent < 0 || extent > (1LL << 28)) fail(file, name + " has a bad shape");
        count *= static_cast<std::size_t>(extent);
    }
    if (offsets.size() != 2 || offsets[0] < 0 || offsets[1] < offsets[0] ||
        static_cast<std::size_t>(offsets[1]) > data.size() ||
        static_cast<std::size_t>(offsets[1] - offsets[0]) != count * sizeof(float)) {
        fail(file, name + ": data offsets do not match its shape");
    }
    std::vector<float> out(count);
    if (count > 0) std::memcpy(out.data(), data.data() + offsets[0], count * sizeof(float));
    return out;
}

}  // namespace

std::shared_ptr<const LatentNetwork> make_latent_network(const LatentWeights& weights) {
    const std::string& source = weights.source;
    FeatureSet features;
    try {
        features = FeatureSet::parse(weights.feature_set);
    } catch (const std::invalid_argument& error) {
        fail(source, error.what());
    }
    const int l1 = weights.l1, hidden = weights.hidden, dim = weights.dim;
    if (l1 <= 0 || l1 > kNnueMaxL1 || hidden <= 0 || hidden > 65536 || dim <= 0 || dim > 65536)
        fail(source, "bad widths L1=" + std::to_string(l1) + " H=" + std::to_string(hidden) +
                         " D=" + std::to_string(dim));
    const auto n = static_cast<std::size_t>(features.size);
    const auto width = static_cast<std::size_t>(l1);
    const auto h = static_cast<std::size_t>(hidden), d = static_cast<std::size_t>(dim);
    // The padding row N (zero, never read) may be there or not.
    if (weights.ft_weight.size() == (n + 1) * width) {
        std::vector<float> rows(weights.ft_weight.begin(), weights.ft_weight.begin() + static_cast<long>(n * width));
        check_size(rows, n * width, "ft.weight", source);
    } else {
        check_size(weights.ft_weight, n * width, "ft.weight", source);
    }
    check_size(weights.ft_bias, width, "ft_bias", source);
    check_size(weights.l2_weight, h * 2 * width, "l2.weight", source);
    check_size(weights.l2_bias, h, "l2.bias", source);
    check_size(weights.l2_stm, h, "l2_stm", source);
    check_size(weights.out_weight, d * h, "out.weight", source);
    check_size(weights.out_bias, d, "out.bias", source);
    check_size(weights.axis, d, "axis", source);
    double norm = 0.0;
    for (const float value : weights.axis) norm += static_cast<double>(value) * value;
    norm = std::sqrt(norm);
    if (!(norm > 0.0)) fail(source, "the axis is all zeros");

    int scale = weights.accumulator_scale;
    if (scale == 0) scale = automatic_scale(weights, features);
    if (scale != 127 && scale != 256 && scale != 512 && scale != 1024)
        fail(source, "accumulator_scale must be 0 (automatic), 127, 256, 512 or 1024, got " +
                         std::to_string(scale));

    auto transformer = std::make_shared<NnueNetwork>();
    transformer->features = features;
    transformer->l1 = l1;
    transformer->l2 = 1;  // output layers unused: zero, of the smallest valid size
    const auto rows = static_cast<std::size_t>(threat_rows_start(features));
    transformer->ft_weight.resize(rows * width);
    for (std::size_t i = 0; i < rows * width; ++i) transformer->ft_weight[i] = quantise(weights.ft_weight[i], scale);
    transformer->threat_weight.resize((n - rows) * width);  // int8 rows, as the NNUE's
    for (std::size_t i = rows * width; i < n * width; ++i) {
        const std::int16_t value = quantise(weights.ft_weight[i], scale);
        if (value < -127 || value > 127)
            fail(source, "a threat-block weight (" + std::to_string(weights.ft_weight[i]) +
                             ") does not fit the int8 rows at accumulator_scale " + std::to_string(scale) +
                             "; threat weights must stay within 127 / scale");
        transformer->threat_weight[i - rows * width] = static_cast<std::int8_t>(value);
    }
    transformer->ft_bias.resize(width);
    for (std::size_t i = 0; i < width; ++i) transformer->ft_bias[i] = quantise(weights.ft_bias[i], scale);
    transformer->l2_weight.assign(2 * width, 0);
    transformer->l2_bias.assign(1, 0);
    transformer->out_weight.assign(1, 0);
    transformer->out_bias.assign(1, 0);
    transformer->source = source;
    try {
        transformer->validate();
    } catch (const std::invalid_argument& error) {
        fail(source, error.what());
    }

    auto network = std::make_shared<LatentNetwork>();
    network->transformer = std::move(transformer);
    network->l1 = l1;
    network->hidden = hidden;
    network->dim = dim;
    network->accumulator_scale = scale;
    network->l2_columns.resize(2 * width * h);
    for (std::size_t j = 0; j < h; ++j)
        for (std::size_t i = 0; i < 2 * width; ++i)
            network->l2_columns[i * h + j] = weights.l2_weight[j * 2 * width + i];
    if (scale == 127) {
        std::vector<std::int8_t> rows(h * 2 * width);
        std::vector<float> unscale(h);
        for (std::size_t j = 0; j < h; ++j) {
            float largest = 0.0f;
            for (std::size_t i = 0; i < 2 * width; ++i)
                largest = std::max(largest, std::abs(weights.l2_weight[j * 2 * width + i]));
            const float row_scale = largest > 0.0f ? 127.0f / largest : 1.0f;
            for (std::size_t i = 0; i < 2 * width; ++i) {
                const float value = std::round(weights.l2_weight[j * 2 * width + i] * row_scale);
                rows[j * 2 * width + i] = static_cast<std::int8_t>(std::clamp(value, -127.0f, 127.0f));
            }
            unscale[j] = 1.0f / (row_scale * 127.0f);
        }
        network->l2_int8_columns = dense_int8_columns(rows.data(), hidden, 2 * l1);
        if (!network->l2_int8_columns.empty()) network->l2_row_unscale = std::move(unscale);
    }
    network->out_columns.resize(h * d);
    for (std::size_t k = 0; k < d; ++k)
        for (std::size_t j = 0; j < h; ++j) network->out_columns[j * d + k] = weights.out_weight[k * h + j];
    network->l2_bias = weights.l2_bias;
    network->l2_stm = weights.l2_stm;
    network->out_bias = weights.out_bias;
    network->unit_axis.resize(d);
    for (std::size_t i = 0; i < d; ++i)
        network->unit_axis[i] = static_cast<float>(weights.axis[i] / norm);
    network->source = source;
    return network;
}

std::shared_ptr<const LatentNetwork> load_latent_network(const std::string& path,
                                                         const std::string& feature_set,
                                                         const std::vector<float>& axis,
                                                         int accumulator_scale) {
    std::string file = path;
    if (file.size() < 12 || file.substr(file.size() - 12) != ".safetensors") {
        file += (file.empty() || file.back() == '/') ? "model.safetensors" : "/model.safetensors";
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(file, "cannot open");
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 8) fail(file, "truncated");
    std::uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | static_cast<unsigned char>(bytes[i]);
    if (header_size > bytes.size() - 8) fail(file, "truncated header");
    const std::string header(bytes.data() + 8, header_size);
    const std::vector<char> data(bytes.begin() + 8 + static_cast<long>(header_size), bytes.end());

    LatentWeights weights;
    weights.source = file;
    weights.feature_set = feature_set;
    weights.axis = axis;
    weights.accumulator_scale = accumulator_scale;
    std::vector<long long> shape;
    weights.ft_weight = float_tensor(header, data, "ft.weight", shape, file);
    if (shape.size() != 2) fail(file, "ft.weight must be 2-dimensional");
    weights.l1 = static_cast<int>(shape[1]);
    weights.ft_bias = float_tensor(header, data, "ft_bias", shape, file);
    weights.l2_weight = float_tensor(header, data, "l2.weight", shape, file);
    if (shape.size() != 2) fail(file, "l2.weight must be 2-dimensional");
    weights.hidden = static_cast<int>(shape[0]);
    weights.l2_bias = float_tensor(header, data, "l2.bias", shape, file);
    weights.l2_stm = float_tensor(header, data, "l2_stm", shape, file);
    weights.out_weight = float_tensor(header, data, "out.weight", shape, file);
    if (shape.size() != 2) fail(file, "out.weight must be 2-dimensional");
    weights.dim = static_cast<int>(shape[0]);
    weights.out_bias = float_tensor(header, data, "out.bias", shape, file);
    return make_latent_network(weights);
}

namespace {
void hidden_float(const LatentNetwork& network, const std::int16_t* white, const std::int16_t* black, float* h);
// z = out.weight h + out.bias, the score against the axis and (when asked) the unit embedding.
float output_layer(const LatentNetwork& network, const float* h, float* z, float* embedding);
}  // namespace

float latent_forward(const LatentNetwork& network, const std::int16_t* white, const std::int16_t* black,
                     Color side_to_move, float* embedding) {
    const int l1 = network.l1, hidden = network.hidden, dim = network.dim;
    constexpr int kMaxWidth = 1024;
    std::vector<float> large;  // only for layers wider than kMaxWidth
    alignas(64) std::array<float, kMaxWidth> small_hidden, small_output;
    float* h = small_hidden.data();
    float* z = small_output.data();
    if (hidden > kMaxWidth || dim > kMaxWidth) {
        large.resize(static_cast<std::size_t>(hidden + dim));
        h = large.data();
        z = large.data() + hidden;
    }
    // h = l2.weight x with x = clamp(acc, 0, S) / S: the int8 layer or the float columns.
    if (!network.l2_int8_columns.empty()) {  // S = 127: the NNUE's integer layer (see the header)
        alignas(64) std::array<std::uint8_t, 2 * kNnueMaxL1> bytes;
        alignas(64) std::array<std::int32_t, 64> sums;
        clamp_accumulator_bytes(white, bytes.data(), l1);
        clamp_accumulator_bytes(black, bytes.data() + l1, l1);
        dense_int8(bytes.data(), 2 * l1, network.l2_int8_columns, hidden, sums.data());
        for (int j = 0; j < hidden; ++j)
            h[j] = static_cast<float>(sums[static_cast<std::size_t>(j)]) * network.l2_row_unscale[j];
    } else {
        hidden_float(network, white, black, h);
    }
    const bool black_to_move = side_to_move == Black;
    for (int j = 0; j < hidden; ++j) {
        float value = h[j] + network.l2_bias[j];
        if (black_to_move) value += network.l2_stm[j];
        h[j] = std::clamp(value, 0.0f, 1.0f);
    }
    return output_layer(network, h, z, embedding);
}

namespace {
// h = l2.weight clamp(acc, 0, S) / S with the float columns, skipping the zero inputs.
void hidden_float(const LatentNetwork& network, const std::int16_t* white, const std::int16_t* black, float* h) {
    const int l1 = network.l1, hidden = network.hidden, scale = network.accumulator_scale;
    std::fill(h, h + hidden, 0.0f);
    const auto add_columns = [&](const std::int16_t* accumulator, int offset) {
        for (int i = 0; i < l1; ++i) {
            const int value = std::clamp<int>(accumulator[i], 0, scale);
            if (value == 0) continue;
            const float input = static_cast<float>(value);
            const float* column = network.l2_columns.data() + static_cast<std::size_t>(offset + i) * hidden;
            for (int j = 0; j < hidden; ++j) h[j] += input * column[j];
        }
    };
    add_columns(white, 0);
    add_columns(black, l1);
    const float inverse_scale = 1.0f / static_cast<float>(scale);
    for (int j = 0; j < hidden; ++j) h[j] *= inverse_scale;
}

float output_layer(const LatentNetwork& network, const float* h, float* z, float* embedding) {
    const int hidden = network.hidden, dim = network.dim;
    std::copy(network.out_bias.begin(), network.out_bias.end(), z);
    for (int j = 0; j < hidden; ++j) {
        if (h[j] == 0.0f) continue;
        const float input = h[j];
        const float* column = network.out_columns.data() + static_cast<std::size_t>(j) * dim;
        for (int k = 0; k < dim; ++k) z[k] += input * column[k];
    }
    float dot = 0.0f, squared = 0.0f;
    for (int k = 0; k < dim; ++k) {
        dot += z[k] * network.unit_axis[k];
        squared += z[k] * z[k];
    }
    const float norm = std::max(std::sqrt(squared), 1e-12f);
    if (embedding != nullptr) {
        for (int k = 0; k < dim; ++k) embedding[k] = z[k] / norm;
    }
    return std::clamp(dot / norm, -1.0f, 1.0f);
}
}  // namespace

float latent_refresh_score(const LatentNetwork& network, const Position& position, float* embedding) {
    const NnueAccumulator accumulator = refresh_accumulator(*network.transformer, position);
    return latent_forward(network, accumulator.values[White].data(), accumulator.values[Black].data(),
                          position.side_to_move(), embedding);
}

LatentEncoder::LatentEncoder(std::shared_ptr<const LatentNetwork> network)
    : network_(std::move(network)), accumulators_(network_->transformer) {}

float LatentEncoder::score(const Position& position, float* embedding) const {
    const NnueAccumulator accumulator = accumulators_.current_accumulator(position);
    return latent_forward(*network_, accumulator.values[White].data(), accumulator.values[Black].data(),
                          position.side_to_move(), embedding);
}

double latent_centipawns(const LatentCalibration& calibration, double score) {
    constexpr double kWinProbabilityScale = 0.00368208;  // latentchess.winprob.WIN_PROB_SCALE
    double logit = 0.0;
    if (calibration.logistic) {
        logit = calibration.slope * score + calibration.intercept;
    } else {
        const double p = std::clamp((score + 1.0) / 2.0, 0.0, 1.0);
        if (p <= 0.0) return -kLatentCentipawnBound;
        if (p >= 1.0) return kLatentCentipawnBound;
        logit = std::log(p / (1.0 - p));
    }
    const double bound = kLatentCentipawnBound;
    return std::clamp(logit / kWinProbabilityScale, -bound, bound);
}

LatentEvaluator::LatentEvaluator(std::shared_ptr<const LatentNetwork> network, LatentCalibration calibration)
    : network_(std::move(network)), calibration_(calibration), accumulators_(network_->transformer) {}

std::unique_ptr<Evaluator> LatentEvaluator::clone() const {
    return std::make_unique<LatentEvaluator>(network_, calibration_);
}

float LatentEvaluator::axis_score(const Position& position) const {
    const NnueAccumulator accumulator = accumulators_.current_accumulator(position);
    return latent_forward(*network_, accumulator.values[White].data(), accumulator.values[Black].data(),
                          position.side_to_move(), nullptr);
}

int LatentEvaluator::evaluate(const Position& position) {
    const auto white = static_cast<int>(std::lround(latent_centipawns(calibration_, axis_score(position))));
    const int relative = position.side_to_move() == White ? white : -white;
    static_assert(kLatentCentipawnBound < kEvaluationBound);
    return relative;
}

namespace {

struct LatentEntry {
    std::shared_ptr<const LatentNetwork> network;
    LatentCalibration calibration;
};

std::mutex& registry_mutex() {
    static std::mutex mutex;
    return mutex;
}

std::map<std::string, LatentEntry>& registry() {
    static std::map<std::string, LatentEntry> entries;
    return entries;
}

}  // namespace

void register_latent_network(const std::string& key, std::shared_ptr<const LatentNetwork> network,
                             LatentCalibration calibration) {
    if (!network) throw std::invalid_argument("latent evaluator '" + key + "': no network");
    if (calibration.logistic && !(std::isfinite(calibration.slope) && std::isfinite(calibration.intercept))) {
        throw std::invalid_argument("latent evaluator '" + key + "': calibration is not finite");
    }
    const std::lock_guard<std::mutex> lock(registry_mutex());
    registry()[key] = LatentEntry{std::move(network), calibration};
}

std::unique_ptr<Evaluator> make_latent_evaluator(const std::string& key) {
    LatentEntry entry;
    {
        const std::lock_guard<std::mutex> lock(registry_mutex());
        const auto found = registry().find(key);
        if (found == registry().end()) {
            throw std::invalid_argument("latent evaluator '" + key +
                                        "' is not registered (latentchess.core.nnue.resolve_evaluator "
                                        "registers a sparse model directory)");
        }
        entry = found->second;
    }
    return std::make_unique<LatentEvaluator>(std::move(entry.network), entry.calibration);
}

}  // namespace latentchess::core
