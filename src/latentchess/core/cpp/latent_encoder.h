// The sparse contrastive encoder (latentchess.models.sparse_encoder) in the native core:
// quantised feature transformer, float dense layers, axis score, incremental through do/undo.
//
// Invariants:
//  * The architecture is the Python module's (its docstring is the reference): White's and
//    Black's accumulators (one shared feature transformer, the NNUE's feature sets), White's
//    first; x = clamp(acc, 0, 1); h = clamp(l2.weight x + l2.bias [+ l2_stm if Black to move],
//    0, 1); z = out.weight h + out.bias; embedding = z / max(|z|, 1e-12); score = clamp(
//    embedding . axis / |axis|, -1, 1) (LatentModel.scores_of), White's view.
//  * Quantisation: the feature transformer only, int16 as the NNUE's: weights and bias rounded
//    (half away from zero) at scale S, accumulators int16, x = clamp(acc_q, 0, S) / S. The dense
//    layers and the axis stay float32. S is the NNUE's 127 when asked (accumulator_scale = 127);
//    by default (0) it is the largest of 1024, 512, 256 for which every accumulator provably
//    fits int16 (|bias| plus the largest possible sum of |weights| of active features, per
//    column), else 127: at 127 the rounding of the weights moved the trained sparse-64's axis
//    scores by up to 3e-2 (benchmarks/results/latent_native), 8 times less at 1024.
//    A threat block (T, TNK; the set's last block) keeps the NNUE's int8 rows: its weights
//    rounded at S must lie in [-127, 127] (the automatic S is lowered until they do; a model
//    whose threat weights exceed 1 does not load), and it counts at most 256 active pairs per
//    perspective in the int16 bound (a piece attacks at most 8 others).
//  * The accumulators are kept by an NnueEvaluator over an NnueNetwork that holds this model's
//    quantised feature transformer (its own output layers are zero and never used), so the
//    incremental update is the NNUE's, tested machinery; after any do/undo sequence the
//    encoder's score equals the refresh's bit for bit (tested).
//  * A LatentNetwork is immutable after construction and shared between encoders (threads);
//    a LatentEncoder belongs to one search (one thread).
//  * Construction validates every size and value (finite weights, non-zero axis) and throws
//    std::invalid_argument naming the source; nothing here aborts.
//  * LatentEvaluator is the alpha-beta search's evaluation slot (evaluate.h) fed by this encoder
//    (`ab:eval=latent`): the same accumulators, null moves included (the accumulators do not
//    depend on the side to move; the dense layers read it), and the axis score mapped to
//    centipawns as the latent engine reports it: White's win probability by the model's
//    calibration, p = 1 / (1 + exp(-(slope * s + intercept))), then winprob.centipawns, i.e.
//    cp = logit(p) / 0.00368208, clipped to +-kLatentCentipawnBound; without an increasing
//    calibration the linear p = (s + 1) / 2 (latent.calibration's fallback).
//  * The search names evaluators by string, so networks are registered by key first
//    (register_latent_network; Python does it in latentchess.core.nnue.resolve_evaluator) and
//    make_evaluator("latent:KEY") builds an evaluator over the registered network. The
//    registry is guarded by a mutex; a key registered again replaces the entry for evaluators
//    made afterwards (those already made keep their network).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "evaluate.h"

#include "nnue.h"
#include "position.h"
#include "types.h"

namespace latentchess::core {

// The float32 tensors of a sparse encoder, as model.safetensors names them.
struct LatentWeights {
    std::string feature_set = "ALL";
    int l1 = 0, hidden = 0, dim = 0;
    std::vector<float> ft_weight;   // (N, L1) or (N + 1, L1): the padding row is dropped
    std::vector<float> ft_bias;     // (L1)
    std::vector<float> l2_weight;   // (H, 2 * L1)
    std::vector<float> l2_bias;     // (H)
    std::vector<float> l2_stm;      // (H)
    std::vector<float> out_weight;  // (D, H)
    std::vector<float> out_bias;    // (D)
    std::vector<float> axis;        // (D), any non-zero length
    int accumulator_scale = 0;      // 0: automatic (see above); else 127, 256, 512 or 1024
    std::string source;             // for messages
};

struct LatentNetwork {
    std::shared_ptr<const NnueNetwork> transformer;  // quantised feature transformer
    int l1 = 0, hidden = 0, dim = 0;
    int accumulator_scale = 127;  // S
    // The dense weights transposed (column j of l2.weight is row j here, H floats; column k of
    // out.weight, D floats), so that a layer is a sum of columns scaled by the non-zero inputs:
    // vectorised without reassociating a float sum, and the clamped zeros cost nothing.
    std::vector<float> l2_columns;   // (2 * L1, H)
    std::vector<float> out_columns;  // (H, D)
    // At S = 127 (the NNUE's scale, where the clamped accumulators are bytes) and a hidden width
    // the NNUE's dense kernel takes (8, 16, 32, 64), l2.weight also as int8 rows, each at its own
    // scale (127 / the row's largest |weight|), regrouped for that kernel: the hidden layer is
    // then the NNUE's integer layer (every input, four at a time) and row j's sum times
    // l2_row_unscale[j] (1 / (its scale * S)). Empty otherwise (the float columns above).
    std::vector<std::int8_t> l2_int8_columns;
    std::vector<float> l2_row_unscale;
    std::vector<float> l2_bias, l2_stm, out_bias;
    std::vector<float> unit_axis;  // axis / |axis|
    std::string source;
};

// Quantises and validates; throws std::invalid_argument naming weights.source.
std::shared_ptr<const LatentNetwork> make_latent_network(const LatentWeights& weights);

// Reads the float32 tensors of `path` (a model directory or its model.safetensors); the feature
// set and axis come from config.json, which the caller (Python) has read and validated. Widths
// are taken from the tensor shapes. Throws std::invalid_argument naming the file.
std::shared_ptr<const LatentNetwork> load_latent_network(const std::string& path,
                                                         const std::string& feature_set,
                                                         const std::vector<float>& axis,
                                                         int accumulator_scale = 0);

// Output of the dense layers on one pair of accumulators: the score and, when `embedding` is
// not null, the D-dimensional unit embedding.
float latent_forward(const LatentNetwork& network, const std::int16_t* white,
                     const std::int16_t* black, Color side_to_move, float* embedding);

// From scratch (refresh of the accumulators).
float latent_refresh_score(const LatentNetwork& network, const Position& position,
                           float* embedding = nullptr);

class LatentEncoder {
  public:
    explicit LatentEncoder(std::shared_ptr<const LatentNetwork> network);

    // Same protocol as the search's Evaluator: on_do_move before position.do_move(move),
    // on_undo_move after position.undo_move().
    void reset(const Position& position) { accumulators_.reset(position); }
    void on_do_move(const Position& before, Move move) { accumulators_.on_do_move(before, move); }
    void on_undo_move() { accumulators_.on_undo_move(); }

    // Score (and embedding) of `position`, which must be the position the stack is at.
    float score(const Position& position, float* embedding = nullptr) const;

    const LatentNetwork& network() const { return *network_; }
    std::shared_ptr<const LatentNetwork> shared_network() const { return network_; }

  private:
    std::shared_ptr<const LatentNetwork> network_;
    NnueEvaluator accumulators_;
};

// The model's map from axis score (White's view) to White's win probability.
struct LatentCalibration {
    bool logistic = false;  // false: the linear fallback (s + 1) / 2
    double slope = 1.0, intercept = 0.0;
};

// |cp| of the latent evaluation never exceeds this (pov_score's clip of the latent engine).
inline constexpr int kLatentCentipawnBound = 10000;

// White's centipawns for an axis score under `calibration` (unrounded, clipped).
double latent_centipawns(const LatentCalibration& calibration, double score);

class LatentEvaluator final : public Evaluator {
  public:
    LatentEvaluator(std::shared_ptr<const LatentNetwork> network, LatentCalibration calibration);

    std::string name() const override { return "latent"; }
    std::unique_ptr<Evaluator> clone() const override;

    void reset(const Position& position) override { accumulators_.reset(position); }
    void on_do_move(const Position& before, Move move) override { accumulators_.on_do_move(before, move); }
    void on_undo_move() override { accumulators_.on_undo_move(); }
    void on_do_null_move() override { accumulators_.on_do_null_move(); }
    void on_undo_null_move() override { accumulators_.on_undo_null_move(); }

    // Centipawns, side to move's view (latent_centipawns of axis_score, rounded).
    int evaluate(const Position& position) override;

    // The axis score (White's view) from the incremental accumulators; `position` must be the
    // one the stack is at.
    float axis_score(const Position& position) const;
    // The stack top's accumulators (for tests: equal to refresh_accumulator's).
    NnueAccumulator current_accumulator(const Position& position) const {
        return accumulators_.current_accumulator(position);
    }
    const LatentNetwork& network() const { return *network_; }
    const LatentCalibration& calibration() const { return calibration_; }

  private:
    std::shared_ptr<const LatentNetwork> network_;
    LatentCalibration calibration_;
    NnueEvaluator accumulators_;
};

// Registers (or replaces) the network and calibration under `key`.
void register_latent_network(const std::string& key, std::shared_ptr<const LatentNetwork> network,
                             LatentCalibration calibration);

// The evaluator make_evaluator returns for "latent:KEY"; std::invalid_argument for a key never
// registered.
std::unique_ptr<Evaluator> make_latent_evaluator(const std::string& key);

}  // namespace latentchess::core
