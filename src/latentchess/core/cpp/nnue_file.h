// Reading an NNUE network from a model directory's model.safetensors (no Python needed).
//
// Invariants:
//  * A threat block's rows are q.ft.threat_weight (int8), the others q.ft.weight (int16).
//  * Only the quantised tensors (q.*) and the header metadata (feature_set, l1, l2) are read;
//    dtypes and shapes are checked against them, and any mismatch throws std::invalid_argument
//    naming the file.
#pragma once

#include <memory>
#include <string>

#include "nnue.h"

namespace latentchess::core {

// `path` is a model directory (holding model.safetensors) or the .safetensors file itself.
std::shared_ptr<const NnueNetwork> load_nnue_network(const std::string& path);

// The evaluator the search's make_evaluator returns for "nnue:PATH".
std::unique_ptr<Evaluator> make_nnue_evaluator(const std::string& path);

}  // namespace latentchess::core
