// Quantised NNUE inference; see nnue.h.
#include "nnue.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

// The dense layer's AVX2 kernel (below) is compiled on every x86-64 build with GCC or Clang: with
// the build's own flags when they include AVX2 (VNNI too where they include it), else for the
// avx2 target alone and picked at run time when the CPU has it (portable wheels).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define LATENTCHESS_DENSE_KERNEL 1
#if defined(__AVX2__)
#define LATENTCHESS_AVX2_TARGET
#else
#define LATENTCHESS_AVX2_TARGET __attribute__((target("avx2")))
#endif
#endif

namespace latentchess::core {

namespace {

inline std::int16_t wrap_add(std::int16_t a, std::int16_t b) {
    return static_cast<std::int16_t>(static_cast<std::uint16_t>(a) + static_cast<std::uint16_t>(b));
}
inline std::int16_t wrap_sub(std::int16_t a, std::int16_t b) {
    return static_cast<std::int16_t>(static_cast<std::uint16_t>(a) - static_cast<std::uint16_t>(b));
}

void add_row(std::int16_t* accumulator, const std::int16_t* row, int width) {
    for (int i = 0; i < width; ++i) accumulator[i] = wrap_add(accumulator[i], row[i]);
}
void sub_row(std::int16_t* accumulator, const std::int16_t* row, int width) {
    for (int i = 0; i < width; ++i) accumulator[i] = wrap_sub(accumulator[i], row[i]);
}

// A threat block's int8 rows, sign-extended into the int16 accumulator.
void add_row(std::int16_t* accumulator, const std::int8_t* row, int width) {
    for (int i = 0; i < width; ++i) accumulator[i] = wrap_add(accumulator[i], static_cast<std::int16_t>(row[i]));
}
void sub_row(std::int16_t* accumulator, const std::int8_t* row, int width) {
    for (int i = 0; i < width; ++i) accumulator[i] = wrap_sub(accumulator[i], static_cast<std::int16_t>(row[i]));
}

// out[i] = clamp(in[i], 0, 127). Written as int16 max/min in its own loop so the compiler
// vectorises it (one combined loop with std::clamp<int> over both perspectives stayed scalar and
// took half of the evaluation's time: perf, benchmarks/results/nnue_distil/README.md).
void clamp_to_bytes(const std::int16_t* in, std::uint8_t* out, int width) {
    for (int i = 0; i < width; ++i) {
        const std::int16_t low = in[i] > 0 ? in[i] : static_cast<std::int16_t>(0);
        out[i] = static_cast<std::uint8_t>(low < 127 ? low : static_cast<std::int16_t>(127));
    }
}

// The dense layer by input chunks (the evaluator's fast path; exactly the same integers as
// output_layers' plain loop). The L2 x 2*L1 weights are regrouped (dense_columns) so that, for each chunk of 4
// inputs, the 4 weights of every unit lie together. One chunk then costs one broadcast of its 4
// input bytes and one multiply-add per 8 units, with no horizontal sums. The clamped inputs are
// rarely zero four at a time (1% of chunks with the shipped network), so every chunk is
// computed; 512-bit registers measured no faster on this AMD EPYC. AVX2 (VNNI where the build
// has it); other CPUs and unit counts take output_layers.
#if defined(LATENTCHESS_DENSE_KERNEL)
LATENTCHESS_AVX2_TARGET inline __m256i multiply_add_bytes(__m256i sums, __m256i inputs, __m256i weights) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(sums, inputs, weights);
#else
    // u8 x i8 pairs into int16 cannot saturate here: inputs <= 127, so |sum| <= 2 * 127 * 128.
    const __m256i pairs = _mm256_maddubs_epi16(inputs, weights);
    return _mm256_add_epi32(sums, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
#endif
}

template <int Groups>  // L2 = 8 * Groups units
LATENTCHESS_AVX2_TARGET void dense_by_chunks(const std::uint8_t* a1, int chunks, const std::int8_t* columns, std::int32_t* z) {
    // Two chunks a step into two sets of sums: the multiply-adds of one set wait on each other.
    __m256i sums[2][Groups];
    for (int g = 0; g < Groups; ++g) sums[0][g] = sums[1][g] = _mm256_setzero_si256();
    for (int chunk = 0; chunk < chunks; chunk += 2) {
        for (int set = 0; set < 2; ++set) {
            std::int32_t packed;
            std::memcpy(&packed, a1 + 4 * (chunk + set), 4);
            const __m256i inputs = _mm256_set1_epi32(packed);
            const std::int8_t* weights = columns + static_cast<std::size_t>(chunk + set) * Groups * 32;
            for (int g = 0; g < Groups; ++g) {
                const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(weights + 32 * g));
                sums[set][g] = multiply_add_bytes(sums[set][g], inputs, w);
            }
        }
    }
    for (int g = 0; g < Groups; ++g) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(z + 8 * g), _mm256_add_epi32(sums[0][g], sums[1][g]));
    }
}
#endif

bool dense_by_chunks_applies(const NnueNetwork& net) {
#if defined(LATENTCHESS_DENSE_KERNEL)
#if !defined(__AVX2__)
    if (!__builtin_cpu_supports("avx2")) return false;
#endif
    return (net.l2 == 8 || net.l2 == 16 || net.l2 == 32 || net.l2 == 64) && net.l1 % 4 == 0;
#else
    (void)net;
    return false;
#endif
}

// The dense layers: centipawns, side to move's view. `columns` (dense_columns' regrouping, for
// this network) takes the chunked kernel; nullptr the plain loop, the reference.
int output_layers(const NnueNetwork& net, const std::int16_t* us, const std::int16_t* them,
                  std::int32_t psqt_us, std::int32_t psqt_them, int pieces,
                  const std::int8_t* columns = nullptr) {
    const int l1 = net.l1;
    const int bucket = net.output_bucket(pieces);
    const std::size_t first_row = static_cast<std::size_t>(bucket) * static_cast<std::size_t>(net.l2);
    alignas(64) std::array<std::uint8_t, 2 * kNnueMaxL1> a1;  // no allocation per evaluation
    clamp_to_bytes(us, a1.data(), l1);
    clamp_to_bytes(them, a1.data() + l1, l1);
    std::int64_t total = net.out_bias[bucket];
    if (!net.psqt_weight.empty()) total += (static_cast<std::int64_t>(psqt_us) - psqt_them) >> 1;
    const auto add_unit = [&](int j, std::int32_t z) {
        const std::size_t unit = first_row + static_cast<std::size_t>(j);
        const int a2 = std::clamp((z + net.l2_bias[unit]) >> 6, 0, 127);
        total += static_cast<std::int64_t>(net.out_weight[unit]) * a2;
    };
#if defined(LATENTCHESS_DENSE_KERNEL)
    if (columns != nullptr) {  // L2 is 8, 16, 32 or 64 (dense_by_chunks_applies)
        const int chunks = 2 * l1 / 4;
        const std::int8_t* first = columns + static_cast<std::size_t>(bucket) * chunks * net.l2 * 4;
        alignas(64) std::array<std::int32_t, 64> z;
        switch (net.l2) {
            case 8: dense_by_chunks<1>(a1.data(), chunks, first, z.data()); break;
            case 16: dense_by_chunks<2>(a1.data(), chunks, first, z.data()); break;
            case 32: dense_by_chunks<4>(a1.data(), chunks, first, z.data()); break;
            default: dense_by_chunks<8>(a1.data(), chunks, first, z.data()); break;
        }
        for (int j = 0; j < net.l2; ++j) add_unit(j, z[static_cast<std::size_t>(j)]);
        return static_cast<int>(total >> 4);
    }
#else
    (void)columns;
#endif
    for (int j = 0; j < net.l2; ++j) {
        const std::int8_t* row = net.l2_weight.data() + (first_row + static_cast<std::size_t>(j)) * 2 * l1;
        std::int32_t z = 0;
        for (int i = 0; i < 2 * l1; ++i) z += static_cast<std::int32_t>(row[i]) * a1[i];
        add_unit(j, z);
    }
    return static_cast<int>(total >> 4);
}

// l2_weight regrouped for output_layers' kernel: bucket, chunk of 4 inputs, unit, 4 weights.
// Empty where that path does not apply.
std::vector<std::int8_t> dense_columns(const NnueNetwork& net) {
    if (!dense_by_chunks_applies(net)) return {};
    const std::size_t inputs = 2 * static_cast<std::size_t>(net.l1), chunks = inputs / 4;
    const std::size_t units = static_cast<std::size_t>(net.l2);
    std::vector<std::int8_t> columns(net.l2_weight.size());
    for (std::size_t bucket = 0; bucket < static_cast<std::size_t>(net.output_buckets); ++bucket) {
        for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
            for (std::size_t unit = 0; unit < units; ++unit) {
                for (std::size_t k = 0; k < 4; ++k) {
                    columns[((bucket * chunks + chunk) * units + unit) * 4 + k] =
                        net.l2_weight[(bucket * units + unit) * inputs + chunk * 4 + k];
                }
            }
        }
    }
    return columns;
}

int bounded(int centipawns) {
    return std::clamp(centipawns, -kEvaluationBound + 1, kEvaluationBound - 1);
}

}  // namespace

void NnueNetwork::validate() const {
    const auto n = static_cast<std::size_t>(features.size);
    const auto w1 = static_cast<std::size_t>(l1), w2 = static_cast<std::size_t>(l2);
    const auto buckets = static_cast<std::size_t>(output_buckets);
    // Output buckets count the pieces of a block with one feature per piece: ALL or a king block.
    const bool counts_pieces = std::any_of(features.blocks.begin(), features.blocks.end(), [](FeatureBlock block) {
        return block == FeatureBlock::All || king_bucket_layout(block) != nullptr;
    });
    if (output_buckets < 1 || output_buckets > 32 || (output_buckets > 1 && !counts_pieces)) {
        throw std::invalid_argument("NNUE network '" + source + "': " + std::to_string(output_buckets) +
                                    " output buckets (1..32, more than one needs the ALL block or a king block)");
    }
    const auto rows = static_cast<std::size_t>(threat_start());
    if (l1 <= 0 || l2 <= 0 || l1 > kNnueMaxL1 || ft_weight.size() != rows * w1 ||
        threat_weight.size() != (n - rows) * w1 || ft_bias.size() != w1 ||
        l2_weight.size() != buckets * w2 * 2 * w1 || l2_bias.size() != buckets * w2 ||
        out_weight.size() != buckets * w2 || out_bias.size() != buckets ||
        (!psqt_weight.empty() && psqt_weight.size() != n)) {
        throw std::invalid_argument("NNUE network '" + source + "': tensor sizes do not match " +
                                    features.name() + " with L1=" + std::to_string(l1) +
                                    " L2=" + std::to_string(l2) + " and " +
                                    std::to_string(output_buckets) + " output buckets");
    }
}

NnueAccumulator refresh_accumulator(const NnueNetwork& network, const Position& position) {
    NnueAccumulator accumulator;
    for (const Color perspective : {White, Black}) {
        auto& values = accumulator.values[perspective];
        values.assign(network.ft_bias.begin(), network.ft_bias.end());
        const int threats = network.threat_start();
        const auto l1 = static_cast<std::size_t>(network.l1);
        for (const int feature : active_features(position, perspective, network.features)) {
            if (feature >= threats)
                add_row(values.data(), network.threat_weight.data() + static_cast<std::size_t>(feature - threats) * l1, network.l1);
            else
                add_row(values.data(), network.ft_weight.data() + static_cast<std::size_t>(feature) * l1, network.l1);
            if (!network.psqt_weight.empty()) accumulator.psqt[perspective] += network.psqt_weight[feature];
        }
    }
    return accumulator;
}

int nnue_output(const NnueNetwork& network, const NnueAccumulator& accumulator, Color side_to_move,
                int pieces) {
    return output_layers(network, accumulator.values[side_to_move].data(),
                         accumulator.values[~side_to_move].data(), accumulator.psqt[side_to_move],
                         accumulator.psqt[~side_to_move], pieces);
}

int nnue_evaluate(const NnueNetwork& network, const Position& position) {
    return nnue_output(network, refresh_accumulator(network, position), position.side_to_move(),
                       popcount(position.occupied()));
}

namespace {

bool is_local(FeatureBlock block) {
    return block == FeatureBlock::All || king_bucket_layout(block) != nullptr || block == FeatureBlock::H ||
           block == FeatureBlock::V || block == FeatureBlock::D1 || block == FeatureBlock::D2;
}

// A local block's feature of one piece, from perspective's view (no offset).
int local_feature(FeatureBlock block, Color perspective, Color color, PieceType type, Square square) {
    const int file = file_of(square);
    const int rank = perspective == White ? rank_of(square) : 7 - rank_of(square);
    const int kind = (type - 1) * 2 + (color == perspective ? 0 : 1);
    switch (block) {
        case FeatureBlock::H: return file * 12 + kind;
        case FeatureBlock::V: return rank * 12 + kind;
        case FeatureBlock::D1: return (file + rank) * 12 + kind;
        case FeatureBlock::D2: return (file + 7 - rank) * 12 + kind;
        default: return (file * 8 + rank) * 12 + kind;
    }
}

}  // namespace

NnueEvaluator::NnueEvaluator(std::shared_ptr<const NnueNetwork> network)
    : network_(std::move(network)) {
    network_->validate();
    dense_columns_ = std::make_shared<const std::vector<std::int8_t>>(dense_columns(*network_));
    const FeatureSet& set = network_->features;
    only_local_ = true;
    for (std::size_t b = 0; b < set.blocks.size(); ++b) {
        if (set.blocks[b] == FeatureBlock::All) all_offset_ = set.offsets[b];
        else if (const KingBucketLayout* layout = king_bucket_layout(set.blocks[b])) {
            king_offset_ = set.offsets[b];
            king_layout_ = layout;
        }
        else if (is_threat_block(set.blocks[b])) {
            threat_offset_ = set.offsets[b];
            threat_layout_ = &threat_layout(set.blocks[b] == FeatureBlock::TNK);
            continue;  // on its own stack
        }
        else if (is_local(set.blocks[b])) shared_blocks_.push_back(b);
        if (!is_local(set.blocks[b])) only_local_ = false;
    }
}

std::unique_ptr<Evaluator> NnueEvaluator::clone() const {
    return std::make_unique<NnueEvaluator>(*this);
}

void NnueEvaluator::add_column(std::int16_t* accumulator, std::int32_t* psqt, int feature) const {
    const auto l1 = static_cast<std::size_t>(network_->l1);
    if (threat_offset_ >= 0 && feature >= threat_offset_)
        add_row(accumulator, network_->threat_weight.data() + static_cast<std::size_t>(feature - threat_offset_) * l1, network_->l1);
    else
        add_row(accumulator, network_->ft_weight.data() + static_cast<std::size_t>(feature) * l1, network_->l1);
    if (!network_->psqt_weight.empty()) *psqt += network_->psqt_weight[feature];
}

void NnueEvaluator::grow_stacks() {
    const std::size_t width = static_cast<std::size_t>(2 * network_->l1);
    const std::size_t plies = static_cast<std::size_t>(ply_) + 2;
    if (stack_.size() >= plies * width) return;
    const std::size_t capacity = std::max(stack_.size() / width * 2, plies);
    stack_.resize(capacity * width);
    psqt_stack_.resize(capacity * 2);
    if (threat_offset_ >= 0) {
        threat_stack_.resize(capacity * width);
        threat_psqt_stack_.resize(capacity * 2);
        threat_ready_.resize(capacity);
        threat_rows_.resize(capacity);
        threat_counts_.resize(capacity);
    }
    if (!shared_blocks_.empty())
        count_stack_.resize(capacity * 2 * static_cast<std::size_t>(network_->features.size));
}

void NnueEvaluator::apply_piece(Color color, PieceType type, Square square, int delta,
                                const int king_buckets[2], ColumnChanges* changes,
                                const bool skip_perspective[2]) {
    const int l1 = network_->l1;
    const FeatureSet& set = network_->features;
    std::int16_t* top = stack_.data() + static_cast<std::size_t>(ply_) * 2 * l1;
    std::int32_t* psqt = psqt_stack_.data() + static_cast<std::size_t>(ply_) * 2;
    std::uint8_t* counts =
        shared_blocks_.empty() ? nullptr
                               : count_stack_.data() + static_cast<std::size_t>(ply_) * 2 * set.size;
    const bool has_psqt = !network_->psqt_weight.empty();
    const auto change = [&](Color perspective, int feature, bool add) {
        if (has_psqt) psqt[perspective] += add ? network_->psqt_weight[feature] : -network_->psqt_weight[feature];
        if (changes == nullptr) {
            const std::int16_t* row = network_->ft_weight.data() + static_cast<std::size_t>(feature) * l1;
            if (add) add_row(top + perspective * l1, row, l1);
            else sub_row(top + perspective * l1, row, l1);
        } else if (add) {
            changes[perspective].added[changes[perspective].added_count++] = feature;
        } else {
            changes[perspective].removed[changes[perspective].removed_count++] = feature;
        }
    };
    for (const Color perspective : {White, Black}) {
        if (skip_perspective != nullptr && skip_perspective[perspective]) continue;
        if (all_offset_ >= 0)
            change(perspective, all_offset_ + all_feature(perspective, color, type, square), delta > 0);
        if (king_offset_ >= 0) {
            change(perspective,
                   king_offset_ + king_bucket_feature(perspective, king_buckets[perspective], color,
                                                      type, square),
                   delta > 0);
        }
        for (const std::size_t b : shared_blocks_) {
            const int feature =
                set.offsets[b] + local_feature(set.blocks[b], perspective, color, type, square);
            std::uint8_t& count = counts[perspective * set.size + feature];
            if (delta > 0 && count++ == 0) change(perspective, feature, true);
            if (delta < 0 && --count == 0) change(perspective, feature, false);
        }
    }
}

void NnueEvaluator::reset(const Position& position) {
    const int l1 = network_->l1;
    ply_ = 0;
    stack_.clear();
    psqt_stack_.clear();
    count_stack_.clear();
    threat_stack_.clear();
    threat_psqt_stack_.clear();
    threat_ready_.clear();
    grow_stacks();
    // The stack holds the bias plus the local blocks; the others are added at evaluation.
    std::fill(count_stack_.begin(), count_stack_.end(), 0);
    for (const Color perspective : {White, Black}) {
        std::copy(network_->ft_bias.begin(), network_->ft_bias.end(), stack_.data() + perspective * l1);
        psqt_stack_[perspective] = 0;
    }
    int king_buckets[2] = {0, 0};  // read only by a king block
    if (king_offset_ >= 0) {
        king_buckets[White] = king_bucket(*king_layout_, White, position.king_square(White));
        king_buckets[Black] = king_bucket(*king_layout_, Black, position.king_square(Black));
    }
    Bitboard occupied = position.occupied();
    while (occupied) {
        const Square square = pop_lsb(occupied);
        apply_piece(position.color_on(square), position.piece_type_on(square), square, +1,
                    king_buckets);
    }
    if (threat_offset_ >= 0) refresh_threats(position);
}

void NnueEvaluator::refresh_threats(const Position& position) {
    const int l1 = network_->l1;
    std::int16_t* top = threat_stack_.data() + static_cast<std::size_t>(ply_) * 2 * l1;
    std::int32_t* psqt = threat_psqt_stack_.data() + static_cast<std::size_t>(ply_) * 2;
    std::fill(top, top + 2 * l1, static_cast<std::int16_t>(0));
    threat_ready_[static_cast<std::size_t>(ply_)] = 1;
    const ThreatBoard board = ThreatBoard::of(position);
    threats_added_.clear();
    threat_pairs(board, board.occupied(), 0, threats_added_);
    for (const Color perspective : {White, Black}) {
        psqt[perspective] = 0;
        for (const ThreatPair pair : threats_added_) {
            const int feature = threat_feature(*threat_layout_, perspective, pair);
            if (feature >= 0) add_column(top + perspective * l1, &psqt[perspective], threat_offset_ + feature);
        }
    }
}

void NnueEvaluator::record_threats(const Position& before, const PieceChange* moves,
                                   int change_count) {
    ThreatBoard board = ThreatBoard::of(before);
    threats_removed_.clear();
    threats_added_.clear();
    for (int i = 0; i < change_count; ++i)  // removals first: castling squares may overlap
        if (moves[i].delta < 0) remove_piece(board, moves[i].square, threats_removed_, threats_added_);
    for (int i = 0; i < change_count; ++i)
        if (moves[i].delta > 0)
            put_piece(board, moves[i].color, moves[i].type, moves[i].square, threats_removed_, threats_added_);
    cancel_common(threats_removed_, threats_added_);
    std::vector<int>& rows = threat_rows_[static_cast<std::size_t>(ply_)];
    std::array<int, 4>& counts = threat_counts_[static_cast<std::size_t>(ply_)];
    rows.clear();
    for (const Color perspective : {White, Black}) {
        for (int sign = 0; sign < 2; ++sign) {
            int& count = counts[static_cast<std::size_t>(perspective * 2 + sign)];
            count = 0;
            for (const ThreatPair pair : sign == 0 ? threats_added_ : threats_removed_) {
                const int feature = threat_feature(*threat_layout_, perspective, pair);
                if (feature < 0) continue;
                rows.push_back(feature);
                ++count;
            }
        }
    }
    // Prefetched together now, so that their cache misses (a threat table is tens of MB) overlap
    // with each other and with the search's work until the evaluation.
    const std::int8_t* weights = network_->threat_weight.data();
    const auto row_bytes = static_cast<std::size_t>(network_->l1);
    for (const int feature : rows) {
        const std::int8_t* row = weights + static_cast<std::size_t>(feature) * row_bytes;
        for (std::size_t byte = 0; byte < row_bytes; byte += 64) __builtin_prefetch(row + byte);
    }
    threat_ready_[static_cast<std::size_t>(ply_)] = 0;
}

void NnueEvaluator::ensure_threats() const {
    int ready = ply_;
    while (!threat_ready_[static_cast<std::size_t>(ready)]) --ready;  // ply 0 is always ready
    const int l1 = network_->l1;
    const std::size_t width = static_cast<std::size_t>(2 * l1);
    const std::int8_t* weights = network_->threat_weight.data();
    const auto row_bytes = static_cast<std::size_t>(l1);
    const bool has_psqt = !network_->psqt_weight.empty();
    for (int ply = ready + 1; ply <= ply_; ++ply) {
        const auto at = static_cast<std::size_t>(ply);
        std::int16_t* child = threat_stack_.data() + at * width;
        std::memcpy(child, child - width, width * sizeof(std::int16_t));
        std::int32_t* psqt = threat_psqt_stack_.data() + at * 2;
        const std::int32_t* parent_psqt = psqt - 2;
        psqt[White] = parent_psqt[White];
        psqt[Black] = parent_psqt[Black];
        const std::vector<int>& rows = threat_rows_[at];
        const std::array<int, 4>& counts = threat_counts_[at];
        std::size_t next = 0;
        for (const Color perspective : {White, Black}) {
            std::int16_t* target = child + perspective * l1;
            for (int sign = 0; sign < 2; ++sign) {
                for (int i = 0; i < counts[static_cast<std::size_t>(perspective * 2 + sign)]; ++i, ++next) {
                    const auto feature = static_cast<std::size_t>(rows[next]);
                    const std::int8_t* row = weights + feature * row_bytes;
                    if (sign == 0) add_row(target, row, l1);
                    else sub_row(target, row, l1);
                    if (has_psqt) {
                        const std::int32_t weight =
                            network_->psqt_weight[static_cast<std::size_t>(threat_offset_) + feature];
                        psqt[perspective] += sign == 0 ? weight : -weight;
                    }
                }
            }
        }
        threat_ready_[at] = 1;
    }
}

void NnueEvaluator::push_ply() {
    grow_stacks();
    psqt_stack_[(ply_ + 1) * 2] = psqt_stack_[ply_ * 2];
    psqt_stack_[(ply_ + 1) * 2 + 1] = psqt_stack_[ply_ * 2 + 1];
    if (!shared_blocks_.empty()) {
        const std::size_t counts = 2 * static_cast<std::size_t>(network_->features.size);
        std::memcpy(count_stack_.data() + (ply_ + 1) * counts, count_stack_.data() + ply_ * counts,
                    counts);
    }
    ++ply_;
}

void NnueEvaluator::on_do_move(const Position& before, Move move) {
    const int l1 = network_->l1;
    const std::size_t width = static_cast<std::size_t>(2 * l1);
    push_ply();  // may grow the stack: pointers into it are taken after
    const std::int16_t* parent = stack_.data() + (ply_ - 1) * width;
    std::int16_t* child = stack_.data() + ply_ * width;
    ColumnChanges changes[2];
    PieceChange moves[4];
    int move_count = 0;
    const Color us = before.side_to_move();
    const Square from = move.from(), to = move.to();
    const PieceType moved = before.piece_type_on(from);
    const PieceType placed = move.promotion() != NoPieceType ? move.promotion() : moved;
    Square king_to = moved == King ? to : NoSquare;
    if (moved == King && before.is_castling(move)) {  // king and rook (squares may overlap)
        const CastlingSquares castle = before.castling_squares(move);
        moves[move_count++] = {us, King, castle.king_from, -1};
        moves[move_count++] = {us, King, castle.king_to, +1};
        moves[move_count++] = {us, Rook, castle.rook_from, -1};
        moves[move_count++] = {us, Rook, castle.rook_to, +1};
        king_to = castle.king_to;
    } else {
        if (before.piece_type_on(to) != NoPieceType && before.color_on(to) != us) {
            moves[move_count++] = {~us, before.piece_type_on(to), to, -1};
        } else if (moved == Pawn && file_of(from) != file_of(to) &&
                   before.piece_type_on(to) == NoPieceType) {
            moves[move_count++] = {~us, Pawn, us == White ? to - 8 : to + 8, -1};  // en passant
        }
        moves[move_count++] = {us, moved, from, -1};
        moves[move_count++] = {us, placed, to, +1};
    }
    // KA, KA9: a king that changes bucket changes every feature of its own perspective, which is
    // refreshed from the pieces after the move; the other perspective is updated as usual.
    int king_buckets[2] = {0, 0};  // read only by a king block
    bool refresh[2] = {false, false};
    if (king_offset_ >= 0) {
        king_buckets[White] = king_bucket(*king_layout_, White, before.king_square(White));
        king_buckets[Black] = king_bucket(*king_layout_, Black, before.king_square(Black));
        if (king_to != NoSquare) {
            refresh[us] = king_bucket(*king_layout_, us, king_to) != king_buckets[us];
        }
    }
    if (all_offset_ >= 0 || king_offset_ >= 0 || !shared_blocks_.empty()) {
        for (int i = 0; i < move_count; ++i)
            apply_piece(moves[i].color, moves[i].type, moves[i].square, moves[i].delta, king_buckets,
                        changes, refresh);
    }
    // The child from the parent in one pass per perspective for the usual move (one column in,
    // one out), then any further columns in place.
    for (const Color perspective : {White, Black}) {
        if (refresh[perspective]) continue;
        const ColumnChanges& c = changes[perspective];
        const std::int16_t* source = parent + perspective * l1;
        std::int16_t* target = child + perspective * l1;
        const auto row = [&](int feature) {
            return network_->ft_weight.data() + static_cast<std::size_t>(feature) * l1;
        };
        int added = 0, removed = 0;
        if (c.added_count > 0 && c.removed_count > 0) {
            const std::int16_t* plus = row(c.added[0]);
            const std::int16_t* minus = row(c.removed[0]);
            for (int i = 0; i < l1; ++i) target[i] = wrap_sub(wrap_add(source[i], plus[i]), minus[i]);
            added = removed = 1;
        } else {
            std::memcpy(target, source, static_cast<std::size_t>(l1) * sizeof(std::int16_t));
        }
        for (; added < c.added_count; ++added) add_row(target, row(c.added[added]), l1);
        for (; removed < c.removed_count; ++removed) sub_row(target, row(c.removed[removed]), l1);
    }
    for (const Color perspective : {White, Black}) {
        if (!refresh[perspective]) continue;
        refresh_perspective(before, moves, move_count, perspective,
                            king_bucket(*king_layout_, us, king_to));
    }
    if (threat_offset_ >= 0) record_threats(before, moves, move_count);
}

void NnueEvaluator::refresh_perspective(const Position& before, const PieceChange* moves,
                                        int change_count, Color perspective, int bucket) {
    const int l1 = network_->l1;
    const FeatureSet& set = network_->features;
    std::int16_t* top = stack_.data() + static_cast<std::size_t>(ply_) * 2 * l1;
    std::copy(network_->ft_bias.begin(), network_->ft_bias.end(), top + perspective * l1);
    psqt_stack_[static_cast<std::size_t>(ply_) * 2 + perspective] = 0;
    if (!shared_blocks_.empty()) {
        std::uint8_t* counts = count_stack_.data() + static_cast<std::size_t>(ply_) * 2 * set.size;
        std::fill(counts + perspective * set.size, counts + (perspective + 1) * set.size, 0);
    }
    const int king_buckets[2] = {bucket, bucket};
    const bool others[2] = {perspective != White, perspective != Black};  // skip the other one
    Bitboard after = before.occupied();
    for (int i = 0; i < change_count; ++i)
        if (moves[i].delta < 0) after &= ~square_bb(moves[i].square);
    while (after) {
        const Square square = pop_lsb(after);
        apply_piece(before.color_on(square), before.piece_type_on(square), square, +1, king_buckets,
                    nullptr, others);
    }
    for (int i = 0; i < change_count; ++i)
        if (moves[i].delta > 0)
            apply_piece(moves[i].color, moves[i].type, moves[i].square, +1, king_buckets, nullptr,
                        others);
}

void NnueEvaluator::on_undo_move() { --ply_; }

void NnueEvaluator::on_do_null_move() {
    const std::size_t width = static_cast<std::size_t>(2 * network_->l1);
    push_ply();
    std::memcpy(stack_.data() + ply_ * width, stack_.data() + (ply_ - 1) * width,
                width * sizeof(std::int16_t));
    if (threat_offset_ >= 0) {  // a null move changes no pair: the parent's sums, when needed
        threat_rows_[static_cast<std::size_t>(ply_)].clear();
        threat_counts_[static_cast<std::size_t>(ply_)] = {0, 0, 0, 0};
        threat_ready_[static_cast<std::size_t>(ply_)] = 0;
    }
}

void NnueEvaluator::on_undo_null_move() { --ply_; }

void NnueEvaluator::add_other_blocks(const Position& position, NnueAccumulator& accumulator) const {
    const FeatureSet& set = network_->features;
    std::vector<int> part;
    for (std::size_t b = 0; b < set.blocks.size(); ++b) {
        if (is_local(set.blocks[b]) || is_threat_block(set.blocks[b])) continue;  // on a stack already
        for (const Color perspective : {White, Black}) {
            block_features(position, perspective, set.blocks[b], part);
            for (const int feature : part) {
                add_column(accumulator.values[perspective].data(), &accumulator.psqt[perspective],
                           set.offsets[b] + feature);
            }
        }
    }
}

NnueAccumulator NnueEvaluator::current_accumulator(const Position& position) const {
    const int l1 = network_->l1;
    const std::int16_t* top = stack_.data() + static_cast<std::size_t>(ply_) * 2 * l1;
    NnueAccumulator accumulator;
    accumulator.values[White].assign(top, top + l1);
    accumulator.values[Black].assign(top + l1, top + 2 * l1);
    accumulator.psqt[White] = psqt_stack_[static_cast<std::size_t>(ply_) * 2];
    accumulator.psqt[Black] = psqt_stack_[static_cast<std::size_t>(ply_) * 2 + 1];
    if (threat_offset_ >= 0) {
        ensure_threats();
        const std::int16_t* threats = threat_stack_.data() + static_cast<std::size_t>(ply_) * 2 * l1;
        for (const Color perspective : {White, Black}) {
            add_row(accumulator.values[perspective].data(), threats + perspective * l1, l1);
            accumulator.psqt[perspective] += threat_psqt_stack_[static_cast<std::size_t>(ply_) * 2 + perspective];
        }
    }
    add_other_blocks(position, accumulator);
    return accumulator;
}

int NnueEvaluator::evaluate(const Position& position) {
    const int l1 = network_->l1;
    const std::int16_t* top = stack_.data() + static_cast<std::size_t>(ply_) * 2 * l1;
    if (only_local_ && threat_offset_ < 0) {
        const Color us = position.side_to_move();
        const std::int32_t* psqt = psqt_stack_.data() + static_cast<std::size_t>(ply_) * 2;
        return dense_output(top + us * l1, top + (~us) * l1, psqt[us], psqt[~us],
                            popcount(position.occupied()));
    }
    if (only_local_) {  // the local blocks plus the threat block, without allocating
        ensure_threats();
        const Color us = position.side_to_move();
        const std::int16_t* threats = threat_stack_.data() + static_cast<std::size_t>(ply_) * 2 * l1;
        alignas(64) std::array<std::int16_t, 2 * kNnueMaxL1> sum;
        for (int i = 0; i < 2 * l1; ++i) sum[static_cast<std::size_t>(i)] = wrap_add(top[i], threats[i]);
        const std::int32_t* psqt = psqt_stack_.data() + static_cast<std::size_t>(ply_) * 2;
        const std::int32_t* threat_psqt = threat_psqt_stack_.data() + static_cast<std::size_t>(ply_) * 2;
        return dense_output(sum.data() + us * l1, sum.data() + (~us) * l1, psqt[us] + threat_psqt[us],
                            psqt[~us] + threat_psqt[~us], popcount(position.occupied()));
    }
    const NnueAccumulator accumulator = current_accumulator(position);
    const Color us = position.side_to_move();
    return dense_output(accumulator.values[us].data(), accumulator.values[~us].data(),
                        accumulator.psqt[us], accumulator.psqt[~us], popcount(position.occupied()));
}

int NnueEvaluator::dense_output(const std::int16_t* us, const std::int16_t* them,
                                std::int32_t psqt_us, std::int32_t psqt_them, int pieces) const {
    const std::int8_t* columns = dense_columns_->empty() ? nullptr : dense_columns_->data();
    return bounded(output_layers(*network_, us, them, psqt_us, psqt_them, pieces, columns));
}

std::vector<std::int8_t> dense_int8_columns(const std::int8_t* rows, int units, int inputs) {
#if defined(LATENTCHESS_DENSE_KERNEL)
#if !defined(__AVX2__)
    if (!__builtin_cpu_supports("avx2")) return {};
#endif
    if ((units != 8 && units != 16 && units != 32 && units != 64) || inputs % 8 != 0) return {};
    const auto n = static_cast<std::size_t>(inputs), chunks = n / 4, u = static_cast<std::size_t>(units);
    std::vector<std::int8_t> columns(u * n);
    for (std::size_t chunk = 0; chunk < chunks; ++chunk)
        for (std::size_t unit = 0; unit < u; ++unit)
            for (std::size_t k = 0; k < 4; ++k) columns[(chunk * u + unit) * 4 + k] = rows[unit * n + chunk * 4 + k];
    return columns;
#else
    (void)rows, (void)units, (void)inputs;
    return {};
#endif
}

void dense_int8(const std::uint8_t* inputs, int count, const std::vector<std::int8_t>& columns, int units,
                std::int32_t* out) {
#if defined(LATENTCHESS_DENSE_KERNEL)
    const int chunks = count / 4;  // even: count is a multiple of 8 (dense_int8_columns)
    switch (units) {
        case 8: dense_by_chunks<1>(inputs, chunks, columns.data(), out); break;
        case 16: dense_by_chunks<2>(inputs, chunks, columns.data(), out); break;
        case 32: dense_by_chunks<4>(inputs, chunks, columns.data(), out); break;
        default: dense_by_chunks<8>(inputs, chunks, columns.data(), out); break;
    }
#else
    (void)inputs, (void)count, (void)columns, (void)units, (void)out;
#endif
}

void clamp_accumulator_bytes(const std::int16_t* in, std::uint8_t* out, int width) { clamp_to_bytes(in, out, width); }

}  // namespace latentchess::core
