// Reading an NNUE network from safetensors; see nnue_file.h.
#include "nnue_file.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace latentchess::core {

namespace {

struct TensorEntry {
    std::string dtype;
    std::vector<long long> shape;
    std::size_t begin = 0, end = 0;
};

[[noreturn]] void fail(const std::string& file, const std::string& problem) {
    throw std::invalid_argument("NNUE file '" + file + "': " + problem);
}

// The value text after `"key":` inside `object` (a flat JSON object of the safetensors header).
std::string object_of(const std::string& header, const std::string& key, const std::string& file) {
    const std::size_t at = header.find("\"" + key + "\"");
    if (at == std::string::npos) fail(file, "missing tensor or metadata '" + key + "'");
    const std::size_t open = header.find('{', at);
    const std::size_t close = header.find('}', open);
    if (open == std::string::npos || close == std::string::npos) fail(file, "bad header");
    return header.substr(open, close - open + 1);
}

std::string string_field(const std::string& object, const std::string& key, const std::string& file) {
    const std::size_t at = object.find("\"" + key + "\"");
    if (at == std::string::npos) fail(file, "missing field '" + key + "'");
    const std::size_t colon = object.find(':', at);
    const std::size_t first = object.find('"', colon + 1);
    const std::size_t last = object.find('"', first + 1);
    if (first == std::string::npos || last == std::string::npos) fail(file, "bad field '" + key + "'");
    return object.substr(first + 1, last - first - 1);
}

std::vector<long long> number_list(const std::string& object, const std::string& key,
                                   const std::string& file) {
    const std::size_t at = object.find("\"" + key + "\"");
    if (at == std::string::npos) fail(file, "missing field '" + key + "'");
    const std::size_t open = object.find('[', at);
    const std::size_t close = object.find(']', open);
    std::vector<long long> out;
    std::string text = object.substr(open + 1, close - open - 1);
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        const std::string number = text.substr(start, comma - start);
        if (number.find_first_of("0123456789") != std::string::npos) out.push_back(std::stoll(number));
        start = comma + 1;
    }
    return out;
}

template <typename T>
std::vector<T> tensor(const std::string& header, const std::vector<char>& data, const std::string& name,
                      const std::string& dtype, std::size_t count, const std::string& file) {
    const std::string object = object_of(header, name, file);
    if (string_field(object, "dtype", file) != dtype) fail(file, name + " is not " + dtype);
    const auto offsets = number_list(object, "data_offsets", file);
    if (offsets.size() != 2 || offsets[1] < offsets[0] ||
        static_cast<std::size_t>(offsets[1]) > data.size() ||
        static_cast<std::size_t>(offsets[1] - offsets[0]) != count * sizeof(T)) {
        fail(file, name + " has " + std::to_string(offsets.size() == 2 ? offsets[1] - offsets[0] : -1) +
                       " bytes, expected " + std::to_string(count * sizeof(T)));
    }
    std::vector<T> out(count);
    std::memcpy(out.data(), data.data() + offsets[0], count * sizeof(T));
    return out;
}

}  // namespace

std::shared_ptr<const NnueNetwork> load_nnue_network(const std::string& path) {
    std::string file = path;
    if (file.size() < 12 || file.substr(file.size() - 12) != ".safetensors") {
        file += (file.empty() || file.back() == '/') ? "model.safetensors" : "/model.safetensors";
    }
    // Three block reads (the header's length, the header, the tensors), not a byte at a time.
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(file, "cannot open");
    unsigned char length[8];
    if (!in.read(reinterpret_cast<char*>(length), 8)) fail(file, "truncated");
    std::uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length[i];
    in.seekg(0, std::ios::end);
    const auto file_size = static_cast<std::uint64_t>(in.tellg());
    if (header_size > file_size - 8) fail(file, "truncated header");
    in.seekg(8, std::ios::beg);
    std::string header(header_size, '\0');
    std::vector<char> data(file_size - 8 - header_size);
    if (!in.read(header.data(), static_cast<std::streamsize>(header_size)) ||
        !in.read(data.data(), static_cast<std::streamsize>(data.size())))
        fail(file, "cannot read");
    const std::string metadata = object_of(header, "__metadata__", file);
    auto network = std::make_shared<NnueNetwork>();
    network->source = file;
    try {
        network->features = FeatureSet::parse(string_field(metadata, "feature_set", file));
        network->l1 = std::stoi(string_field(metadata, "l1", file));
        network->l2 = std::stoi(string_field(metadata, "l2", file));
        // Files written before output buckets have no such key: one bucket.
        if (metadata.find("\"output_buckets\"") != std::string::npos)
            network->output_buckets = std::stoi(string_field(metadata, "output_buckets", file));
    } catch (const std::logic_error& error) {
        fail(file, error.what());
    }
    const auto n = static_cast<std::size_t>(network->features.size);
    const auto l1 = static_cast<std::size_t>(network->l1), l2 = static_cast<std::size_t>(network->l2);
    if (network->output_buckets < 1 || network->output_buckets > 32)
        fail(file, "output_buckets " + std::to_string(network->output_buckets) + " is not 1..32");
    const auto buckets = static_cast<std::size_t>(network->output_buckets);
    const auto rows = static_cast<std::size_t>(network->threat_start());  // a threat block's apart
    network->ft_weight = tensor<std::int16_t>(header, data, "q.ft.weight", "I16", rows * l1, file);
    if (rows < n)
        network->threat_weight = tensor<std::int8_t>(header, data, "q.ft.threat_weight", "I8", (n - rows) * l1, file);
    network->ft_bias = tensor<std::int16_t>(header, data, "q.ft.bias", "I16", l1, file);
    network->l2_weight = tensor<std::int8_t>(header, data, "q.l2.weight", "I8", buckets * l2 * 2 * l1, file);
    network->l2_bias = tensor<std::int32_t>(header, data, "q.l2.bias", "I32", buckets * l2, file);
    network->out_weight = tensor<std::int32_t>(header, data, "q.out.weight", "I32", buckets * l2, file);
    network->out_bias = tensor<std::int32_t>(header, data, "q.out.bias", "I32", buckets, file);
    // Optional psqt term (metadata "psqt": "True"); files written before it have no such key.
    if (metadata.find("\"psqt\"") != std::string::npos && string_field(metadata, "psqt", file) == "True") {
        network->psqt_weight = tensor<std::int32_t>(header, data, "q.psqt.weight", "I32", n, file);
    }
    network->validate();
    return network;
}

std::unique_ptr<Evaluator> make_nnue_evaluator(const std::string& path) {
    return std::make_unique<NnueEvaluator>(load_nnue_network(path));
}

}  // namespace latentchess::core
