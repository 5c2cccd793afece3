// Quantised NNUE inference and the NNUE Evaluator (the search's evaluation slot).
//
// Invariants:
//  * Layout and scales equal latentchess.nnue.model.quantised_forward (the Python reference):
//    ft_weight int16 (N, L1) row-major at scale 127 (a threat block's rows apart: threat_weight,
//    int8 at the same scale), ft_bias int16 (L1); accumulators int16
//    (wrapping adds, as the reference's int16 cast); a1 = clamp(acc, 0, 127), side to move first;
//    l2_weight int8 (L2, 2 * L1) at scale 64, l2_bias int32; a2 = clamp(z >> 6, 0, 127);
//    centipawns = (out_weight . a2 + out_bias) >> 4 (arithmetic shift = floor). With the optional
//    psqt term (psqt_weight int32 (N), centipawns * 16): (psqt(us) - psqt(them)) >> 1 is added to
//    the sum before the final shift; psqt(perspective) sums the weights of its active features.
//  * With output_buckets = B > 1 the dense layers come in B copies, bucket-major (bucket b's L2
//    rows are b * L2 .. b * L2 + L2 - 1, its output weights likewise, its bias out_bias[b]); a
//    position uses copy output_bucket(pieces on the board), as the Python reference does.
//  * NnueEvaluator computes the dense layer from a regrouped copy of l2_weight with an AVX2
//    kernel where the CPU has one (nnue.cpp, output_layers with dense_columns; picked at run time in
//    portable builds): the same integers as output_layers, which nnue_output and nnue_evaluate
//    keep as the reference (tested against each other and the Python reference).
//  * The network is immutable after construction and shared between evaluators (and threads).
//  * NnueEvaluator keeps one accumulator pair per ply on a stack: on_do_move computes the child's
//    from the parent's for the local blocks (ALL, H, V, D1, D2: a feature depends on one piece's
//    square) by applying the moved, captured and castling-rook pieces' changes. H, V, D1 and D2
//    share a feature between pieces (two pawns on one rank), so a per-feature piece count rides
//    along and a column is added when its count leaves 0 and removed when it returns to 0. The
//    non-local blocks (PH, PV, MB, MC) are summed at evaluation (refresh).
//    KA and KA9 (ALL in king buckets) are local too, except that a king move into another
//    bucket changes every feature of its own perspective: that perspective is then computed from scratch.
//    After any sequence of do/undo, the stack top equals refresh(position) (tested).
//  * A threat block (T, TNK: nnue_threats.h) has its own accumulator stack (no bias). A move
//    records the rows of the pairs it removes and adds (remove_piece, put_piece) and prefetches them; they
//    are applied when an evaluation needs that ply (lazily: a node cut off before its evaluation
//    never pays for them), from the nearest ply whose threat sums are ready; untouched by king-bucket
//    refreshes and null moves; evaluation adds it to the local blocks' (int16 wrapping adds, so
//    the sum equals the reference's).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evaluate.h"
#include "nnue_features.h"
#include "nnue_threats.h"
#include "position.h"
#include "types.h"

namespace latentchess::core {

inline constexpr int kNnueMaxL1 = 4096;  // accumulator width limit (stack buffers)

struct NnueNetwork {
    FeatureSet features;
    int l1 = 0;
    int l2 = 0;
    std::vector<std::int16_t> ft_weight;  // (N, L1); without a threat block's rows
    std::vector<std::int8_t> threat_weight;  // (T, L1): a threat block's rows, int8 (scale 127)
    std::vector<std::int16_t> ft_bias;    // (L1)
    int output_buckets = 1;
    std::vector<std::int8_t> l2_weight;   // (buckets * L2, 2 * L1)
    std::vector<std::int32_t> l2_bias;    // (buckets * L2)
    std::vector<std::int32_t> out_weight;  // (buckets * L2)
    std::vector<std::int32_t> out_bias;    // (buckets)
    std::vector<std::int32_t> psqt_weight;  // (N), or empty: no psqt term
    std::string source;  // where it was loaded from (for messages)

    // The first feature of the threat block (the set's last block), N without one.
    int threat_start() const {
        return !features.blocks.empty() && is_threat_block(features.blocks.back())
                   ? features.offsets.back()
                   : features.size;
    }
    // Throws std::invalid_argument when the sizes do not match the feature set and widths.
    void validate() const;
    // The dense-layer copy of a position with `pieces` pieces (kings included).
    int output_bucket(int pieces) const {
        const int bucket = (pieces - 1) * output_buckets / 32;
        return bucket < 0 ? 0 : bucket >= output_buckets ? output_buckets - 1 : bucket;
    }
};

// Accumulators of both perspectives (White = 0, Black = 1), int16, L1 each.
struct NnueAccumulator {
    std::vector<std::int16_t> values[2];
    std::int32_t psqt[2] = {0, 0};  // the psqt sums (0 without the term)
};

// Accumulator of a position from scratch (every block).
NnueAccumulator refresh_accumulator(const NnueNetwork& network, const Position& position);

// The output layers on an accumulator: centipawns, side to move's view; `pieces` (kings included)
// picks the output bucket.
int nnue_output(const NnueNetwork& network, const NnueAccumulator& accumulator, Color side_to_move,
                int pieces);

// Full evaluation from scratch (refresh + output).
int nnue_evaluate(const NnueNetwork& network, const Position& position);

// The NNUE's first dense layer kernel, for other heads on its accumulators (the latent encoder's):
// `rows` is a units x inputs int8 matrix (row-major); dense_int8_columns regroups it for
// dense_int8, or returns an empty vector where the kernel does not apply (units not 8, 16, 32 or
// 64, inputs not a multiple of 8, or a CPU without AVX2). dense_int8 writes out[j] = sum_i
// rows[j][i] * inputs[i] (inputs 0..127) exactly; clamp_accumulator_bytes clamps int16
// accumulator values to those bytes.
std::vector<std::int8_t> dense_int8_columns(const std::int8_t* rows, int units, int inputs);
void dense_int8(const std::uint8_t* inputs, int count, const std::vector<std::int8_t>& columns, int units,
                std::int32_t* out);
void clamp_accumulator_bytes(const std::int16_t* in, std::uint8_t* out, int width);

class NnueEvaluator final : public Evaluator {
  public:
    explicit NnueEvaluator(std::shared_ptr<const NnueNetwork> network);

    std::string name() const override { return "nnue"; }
    std::unique_ptr<Evaluator> clone() const override;

    void reset(const Position& position) override;
    void on_do_move(const Position& before, Move move) override;
    void on_undo_move() override;
    void on_do_null_move() override;
    void on_undo_null_move() override;

    int evaluate(const Position& position) override;

    // The stack top's full accumulator (ALL part + the other blocks of position), for tests.
    NnueAccumulator current_accumulator(const Position& position) const;
    const NnueNetwork& network() const { return *network_; }

  private:
    // Add a feature's column (and its psqt weight) to one perspective's accumulator.
    void add_column(std::int16_t* accumulator, std::int32_t* psqt, int feature) const;
    void add_other_blocks(const Position& position, NnueAccumulator& accumulator) const;
    // The columns one move adds to / removes from a perspective's accumulator (at most 3 pieces
    // change, each in up to 5 local blocks).
    struct ColumnChanges {
        int added[16];
        int removed[16];
        int added_count = 0;
        int removed_count = 0;
    };
    // One piece (colour, type) appearing (+1) or leaving (-1) a square: every local block's
    // feature in both perspectives. Updates the psqt pair and the counts at ply_; the columns
    // are added to the accumulators at ply_ now (changes == nullptr) or recorded in changes.
    // The king block's features use king_buckets (per perspective); a perspective with skip_perspective set
    // is left alone.
    void apply_piece(Color color, PieceType type, Square square, int delta,
                     const int king_buckets[2], ColumnChanges* changes = nullptr,
                     const bool skip_perspective[2] = nullptr);
    // A piece leaving (-1) or arriving (+1) on a square: a move makes at most four.
    struct PieceChange {
        Color color;
        PieceType type;
        Square square;
        int delta;
    };
    // KA, KA9: after a move whose king changed bucket: perspective's accumulator, psqt sum and
    // piece counts at ply_ from scratch, from the pieces of `before` with the move's changes applied.
    void refresh_perspective(const Position& before, const PieceChange* moves, int change_count,
                             Color perspective, int bucket);
    void grow_stacks();
    // The threat block: the rows a move changes at ply_ (its edits applied to `before`),
    // recorded and prefetched; the sums at ply_ made ready from the nearest ready ply; from
    // scratch (reset).
    void record_threats(const Position& before, const PieceChange* moves, int change_count);
    void ensure_threats() const;
    void refresh_threats(const Position& position);
    // The dense layers on one accumulator pair (side to move first), bounded centipawns: the
    // chunked fast path where dense_columns_ holds the regrouped weights, else output_layers.
    int dense_output(const std::int16_t* us, const std::int16_t* them, std::int32_t psqt_us,
                     std::int32_t psqt_them, int pieces) const;
    // Opens ply_ + 1 with the parent's psqt sums and piece counts (the accumulator is the
    // caller's to fill) and moves to it.
    void push_ply();

    std::shared_ptr<const NnueNetwork> network_;
    // network_'s l2_weight regrouped by input chunk (nnue.cpp, dense_columns), shared
    // by clones; empty where the CPU or L2 has no fast path.
    std::shared_ptr<const std::vector<std::int8_t>> dense_columns_;
    int all_offset_ = -1;  // offset of the ALL block, -1 when the set has none
    int king_offset_ = -1;  // offset of the king block (KA, KA9), -1 when the set has none
    const KingBucketLayout* king_layout_ = nullptr;  // that block's layout
    std::vector<std::size_t> shared_blocks_;  // indices of H, V, D1, D2 in the set (counted)
    bool only_local_ = false;  // no block is summed at evaluation
    std::vector<std::uint8_t> count_stack_;  // per ply: 2 * N piece counts (when shared_blocks_)
    std::vector<std::int16_t> stack_;  // per ply: 2 * L1 values (White's, then Black's)
    std::vector<std::int32_t> psqt_stack_;  // per ply: the 2 psqt sums (White's, then Black's)
    int threat_offset_ = -1;  // offset of the threat block, -1 when the set has none
    const ThreatLayout* threat_layout_ = nullptr;
    // Per ply: 2 * L1 threat sums (no bias), the 2 threat psqt sums, whether they are ready, and
    // the rows of the move into the ply: White's added, White's removed, Black's added, Black's
    // removed (counts in threat_counts_). Mutable: made ready on reading.
    mutable std::vector<std::int16_t> threat_stack_;
    mutable std::vector<std::int32_t> threat_psqt_stack_;
    mutable std::vector<std::uint8_t> threat_ready_;
    std::vector<std::vector<int>> threat_rows_;
    std::vector<std::array<int, 4>> threat_counts_;
    std::vector<ThreatPair> threats_removed_, threats_added_;  // scratch of record_threats
    int ply_ = 0;
};

}  // namespace latentchess::core
