// Quantised NNUE inference; see nnue.h.
#include "nnue.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

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

// out[i] = clamp(in[i], 0, 127). Written as int16 max/min in its own loop so the compiler
// vectorises it (one combined loop with std::clamp<int> over both perspectives stayed scalar and
// took half of the evaluation's time: perf, benchmarks/results/nnue_distil/README.md).
void clamp_to_bytes(const std::int16_t* in, std::uint8_t* out, int width) {
    for (int i = 0; i < width; ++i) {
        const std::int16_t low = in[i] > 0 ? in[i] : static_cast<std::int16_t>(0);
        out[i] = static_cast<std::uint8_t>(low < 127 ? low : static_cast<std::int16_t>(127));
    }
}

int output_layers(const NnueNetwork& net, const std::int16_t* us, const std::int16_t* them,
                  std::int32_t psqt_us, std::int32_t psqt_them) {
    const int l1 = net.l1;
    alignas(64) std::array<std::uint8_t, 2 * kNnueMaxL1> a1;  // no allocation per evaluation
    clamp_to_bytes(us, a1.data(), l1);
    clamp_to_bytes(them, a1.data() + l1, l1);
    std::int64_t total = net.out_bias;
    if (!net.psqt_weight.empty()) total += (static_cast<std::int64_t>(psqt_us) - psqt_them) >> 1;
    for (int j = 0; j < net.l2; ++j) {
        const std::int8_t* row = net.l2_weight.data() + static_cast<std::size_t>(j) * 2 * l1;
        std::int32_t z = 0;
        for (int i = 0; i < 2 * l1; ++i) z += static_cast<std::int32_t>(row[i]) * a1[i];
        z += net.l2_bias[j];
        const int a2 = std::clamp(z >> 6, 0, 127);
        total += static_cast<std::int64_t>(net.out_weight[j]) * a2;
    }
    return static_cast<int>(total >> 4);
}

int bounded(int centipawns) {
    return std::clamp(centipawns, -kEvaluationBound + 1, kEvaluationBound - 1);
}

}  // namespace

void NnueNetwork::validate() const {
    const auto n = static_cast<std::size_t>(features.size);
    const auto w1 = static_cast<std::size_t>(l1), w2 = static_cast<std::size_t>(l2);
    if (l1 <= 0 || l2 <= 0 || l1 > kNnueMaxL1 || ft_weight.size() != n * w1 || ft_bias.size() != w1 ||
        l2_weight.size() != w2 * 2 * w1 || l2_bias.size() != w2 || out_weight.size() != w2 ||
        (!psqt_weight.empty() && psqt_weight.size() != n)) {
        throw std::invalid_argument("NNUE network '" + source + "': tensor sizes do not match " +
                                    features.name() + " with L1=" + std::to_string(l1) +
                                    " L2=" + std::to_string(l2));
    }
}

NnueAccumulator refresh_accumulator(const NnueNetwork& network, const Position& position) {
    NnueAccumulator accumulator;
    for (const Color perspective : {White, Black}) {
        auto& values = accumulator.values[perspective];
        values.assign(network.ft_bias.begin(), network.ft_bias.end());
        for (const int feature : active_features(position, perspective, network.features)) {
            add_row(values.data(), network.ft_weight.data() + static_cast<std::size_t>(feature) * network.l1,
                    network.l1);
            if (!network.psqt_weight.empty()) accumulator.psqt[perspective] += network.psqt_weight[feature];
        }
    }
    return accumulator;
}

int nnue_output(const NnueNetwork& network, const NnueAccumulator& accumulator, Color side_to_move) {
    return output_layers(network, accumulator.values[side_to_move].data(),
                         accumulator.values[~side_to_move].data(), accumulator.psqt[side_to_move],
                         accumulator.psqt[~side_to_move]);
}

int nnue_evaluate(const NnueNetwork& network, const Position& position) {
    return nnue_output(network, refresh_accumulator(network, position), position.side_to_move());
}

NnueEvaluator::NnueEvaluator(std::shared_ptr<const NnueNetwork> network)
    : network_(std::move(network)) {
    network_->validate();
    for (std::size_t b = 0; b < network_->features.blocks.size(); ++b) {
        if (network_->features.blocks[b] == FeatureBlock::All) all_offset_ = network_->features.offsets[b];
    }
}

std::unique_ptr<Evaluator> NnueEvaluator::clone() const {
    return std::make_unique<NnueEvaluator>(*this);
}

void NnueEvaluator::add_column(std::int16_t* accumulator, std::int32_t* psqt, int feature) const {
    add_row(accumulator, network_->ft_weight.data() + static_cast<std::size_t>(feature) * network_->l1,
            network_->l1);
    if (!network_->psqt_weight.empty()) *psqt += network_->psqt_weight[feature];
}

void NnueEvaluator::sub_column(std::int16_t* accumulator, std::int32_t* psqt, int feature) const {
    sub_row(accumulator, network_->ft_weight.data() + static_cast<std::size_t>(feature) * network_->l1,
            network_->l1);
    if (!network_->psqt_weight.empty()) *psqt -= network_->psqt_weight[feature];
}

void NnueEvaluator::reset(const Position& position) {
    const int l1 = network_->l1;
    ply_ = 0;
    stack_.assign(static_cast<std::size_t>(2 * l1) * 8, 0);
    psqt_stack_.assign(2 * 8, 0);
    // The stack holds the bias plus the ALL block only; other blocks are added at evaluation.
    for (const Color perspective : {White, Black}) {
        std::int16_t* values = stack_.data() + perspective * l1;
        std::int32_t* psqt = psqt_stack_.data() + perspective;
        std::copy(network_->ft_bias.begin(), network_->ft_bias.end(), values);
        if (all_offset_ < 0) continue;
        Bitboard occupied = position.occupied();
        while (occupied) {
            const Square square = pop_lsb(occupied);
            add_column(values, psqt,
                       all_offset_ + all_feature(perspective, position.color_on(square),
                                                 position.piece_type_on(square), square));
        }
    }
}

void NnueEvaluator::on_do_move(const Position& before, Move move) {
    const int l1 = network_->l1;
    const std::size_t width = static_cast<std::size_t>(2 * l1);
    if (stack_.size() < (ply_ + 2) * width) stack_.resize(std::max(stack_.size() * 2, (ply_ + 2) * width));
    if (psqt_stack_.size() < static_cast<std::size_t>(ply_ + 2) * 2) psqt_stack_.resize(stack_.size() / width * 2);
    std::int16_t* parent = stack_.data() + ply_ * width;
    std::int16_t* child = parent + width;
    std::memcpy(child, parent, width * sizeof(std::int16_t));
    std::int32_t* child_psqt = psqt_stack_.data() + (ply_ + 1) * 2;
    child_psqt[0] = child_psqt[-2];
    child_psqt[1] = child_psqt[-1];
    ++ply_;
    if (all_offset_ < 0) return;
    const Color us = before.side_to_move();
    const Square from = move.from(), to = move.to();
    const PieceType moved = before.piece_type_on(from);
    const PieceType placed = move.promotion() != NoPieceType ? move.promotion() : moved;
    Square captured_square = NoSquare;
    PieceType captured = NoPieceType;
    if (before.piece_type_on(to) != NoPieceType && before.color_on(to) != us) {
        captured_square = to;
        captured = before.piece_type_on(to);
    } else if (moved == Pawn && file_of(from) != file_of(to) && before.piece_type_on(to) == NoPieceType) {
        captured_square = us == White ? to - 8 : to + 8;  // en passant
        captured = Pawn;
    }
    const bool castling = moved == King && (to - from == 2 || from - to == 2);
    for (const Color perspective : {White, Black}) {
        std::int16_t* values = child + perspective * l1;
        std::int32_t* psqt = child_psqt + perspective;
        sub_column(values, psqt, all_offset_ + all_feature(perspective, us, moved, from));
        add_column(values, psqt, all_offset_ + all_feature(perspective, us, placed, to));
        if (captured != NoPieceType) {
            sub_column(values, psqt,
                       all_offset_ + all_feature(perspective, ~us, captured, captured_square));
        }
        if (castling) {
            const int rank = rank_of(from);
            const bool kingside = file_of(to) == 6;
            const Square rook_from = make_square(kingside ? 7 : 0, rank);
            const Square rook_to = make_square(kingside ? 5 : 3, rank);
            sub_column(values, psqt, all_offset_ + all_feature(perspective, us, Rook, rook_from));
            add_column(values, psqt, all_offset_ + all_feature(perspective, us, Rook, rook_to));
        }
    }
}

void NnueEvaluator::on_undo_move() { --ply_; }

void NnueEvaluator::on_do_null_move() {
    const std::size_t width = static_cast<std::size_t>(2 * network_->l1);
    if (stack_.size() < (ply_ + 2) * width) stack_.resize(std::max(stack_.size() * 2, (ply_ + 2) * width));
    if (psqt_stack_.size() < static_cast<std::size_t>(ply_ + 2) * 2) psqt_stack_.resize(stack_.size() / width * 2);
    std::memcpy(stack_.data() + (ply_ + 1) * width, stack_.data() + ply_ * width,
                width * sizeof(std::int16_t));
    psqt_stack_[(ply_ + 1) * 2] = psqt_stack_[ply_ * 2];
    psqt_stack_[(ply_ + 1) * 2 + 1] = psqt_stack_[ply_ * 2 + 1];
    ++ply_;
}

void NnueEvaluator::on_undo_null_move() { --ply_; }

void NnueEvaluator::add_other_blocks(const Position& position, NnueAccumulator& accumulator) const {
    const FeatureSet& set = network_->features;
    std::vector<int> part;
    for (std::size_t b = 0; b < set.blocks.size(); ++b) {
        if (set.blocks[b] == FeatureBlock::All) continue;
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
    add_other_blocks(position, accumulator);
    return accumulator;
}

int NnueEvaluator::evaluate(const Position& position) {
    const int l1 = network_->l1;
    const std::int16_t* top = stack_.data() + static_cast<std::size_t>(ply_) * 2 * l1;
    if (network_->features.only_all()) {
        const Color us = position.side_to_move();
        const std::int32_t* psqt = psqt_stack_.data() + static_cast<std::size_t>(ply_) * 2;
        return bounded(output_layers(*network_, top + us * l1, top + (~us) * l1, psqt[us], psqt[~us]));
    }
    return bounded(nnue_output(*network_, current_accumulator(position), position.side_to_move()));
}

}  // namespace latentchess::core
