// Python bindings of the sparse encoder and the latent search (called from bindings.cpp).
//
// Invariants:
//  * Moves cross the boundary as 16-bit python-chess-compatible bits (inputs) and UCI strings
//    (search results); scores as floats, White's view.
//  * Bad weights (sizes, non-finite values, unknown feature sets) raise ValueError naming the
//    source; latentchess.search.native turns them into ModelFileError for model files.
//  * The search and the batched calls run with the GIL released; the per-iteration callback and
//    the stop poll run with it re-acquired on the searching thread. An exception raised by
//    either stops the search and is re-raised once it has returned.
//  * A LatentSearch runs one search at a time: a second concurrent call raises RuntimeError
//    instead of racing on its state.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "latent_encoder.h"
#include "latent_search.h"
#include "movegen.h"
#include "position.h"

namespace py = pybind11;

namespace latentchess::core {

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

std::vector<float> to_vector(const FloatArray& array) {
    return std::vector<float>(array.data(), array.data() + array.size());
}

py::array_t<float> float_array(const std::vector<float>& values) {
    py::array_t<float> out(static_cast<py::ssize_t>(values.size()));
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
}

Move legal_move(const Position& position, int bits) {
    if (bits < 0 || bits > 0xFFFF) throw MoveError("move bits out of range: " + std::to_string(bits));
    const Move move = Move::from_bits(static_cast<std::uint16_t>(bits));
    if (!position.is_legal(move)) throw MoveError("illegal move " + move.to_uci() + " in " + position.fen());
    return move;
}

// One shared network; an encoder per call (calls may come from several threads).
class PyLatentEncoder {
  public:
    explicit PyLatentEncoder(std::shared_ptr<const LatentNetwork> network) : network_(std::move(network)) {}
    const std::shared_ptr<const LatentNetwork>& network() const { return network_; }

    float score(const Position& position) const { return latent_refresh_score(*network_, position); }

    py::array_t<float> embed(const Position& position) const {
        std::vector<float> embedding(static_cast<std::size_t>(network_->dim));
        latent_refresh_score(*network_, position, embedding.data());
        return float_array(embedding);
    }

    py::array_t<float> score_fens(const std::vector<std::string>& fens) const {
        std::vector<float> scores(fens.size());
        {
            py::gil_scoped_release release;
            for (std::size_t i = 0; i < fens.size(); ++i)
                scores[i] = latent_refresh_score(*network_, Position::from_fen(fens[i]));
        }
        return float_array(scores);
    }

    py::array_t<float> embed_fens(const std::vector<std::string>& fens) const {
        const auto dim = static_cast<py::ssize_t>(network_->dim);
        py::array_t<float> out({static_cast<py::ssize_t>(fens.size()), dim});
        float* data = out.mutable_data();
        {
            py::gil_scoped_release release;
            for (std::size_t i = 0; i < fens.size(); ++i)
                latent_refresh_score(*network_, Position::from_fen(fens[i]), data + i * static_cast<std::size_t>(dim));
        }
        return out;
    }

    // Children in python-chess order: (move bits, scores); incremental (do/undo) or refresh.
    py::tuple score_children(const Position& root, bool incremental) const {
        Position position(root);
        MoveList moves;
        python_chess_move_order(position, moves);
        std::vector<float> scores(static_cast<std::size_t>(moves.size));
        LatentEncoder encoder(network_);
        encoder.reset(position);
        for (int i = 0; i < moves.size; ++i) {
            if (incremental) encoder.on_do_move(position, moves[i]);
            position.do_move(moves[i]);
            scores[static_cast<std::size_t>(i)] =
                incremental ? encoder.score(position) : latent_refresh_score(*network_, position);
            position.undo_move();
            if (incremental) encoder.on_undo_move();
        }
        py::list bits;
        for (const Move move : moves) bits.append(static_cast<int>(move.bits()));
        return py::make_tuple(bits, float_array(scores));
    }

    // Scores along a line: pushed one move at a time (incremental), popped back (incremental
    // after undo, the deepest first) and from scratch (refresh, the root first).
    py::dict line_scores(const Position& root, const std::vector<int>& moves) const {
        Position position(root);
        LatentEncoder encoder(network_);
        encoder.reset(position);
        std::vector<float> pushed, popped, refreshed;
        refreshed.push_back(latent_refresh_score(*network_, position));
        pushed.push_back(encoder.score(position));
        for (const int bits : moves) {
            const Move move = legal_move(position, bits);
            encoder.on_do_move(position, move);
            position.do_move(move);
            pushed.push_back(encoder.score(position));
            refreshed.push_back(latent_refresh_score(*network_, position));
        }
        for (std::size_t i = 0; i < moves.size(); ++i) {
            position.undo_move();
            encoder.on_undo_move();
            popped.push_back(encoder.score(position));
        }
        py::dict out;
        out["incremental"] = float_array(pushed);
        out["undone"] = float_array(popped);
        out["refresh"] = float_array(refreshed);
        return out;
    }

    // Benchmark: scores every child of every position `repeat` times in C++ (GIL released);
    // returns (children scored, seconds).
    py::tuple time_children(const std::vector<std::string>& fens, bool incremental, int repeat) const {
        std::vector<Position> positions;
        for (const std::string& fen : fens) positions.push_back(Position::from_fen(fen));
        long long count = 0;
        double sink = 0.0;
        double seconds = 0.0;
        {
            py::gil_scoped_release release;
            LatentEncoder encoder(network_);
            MoveList moves;
            const auto began = std::chrono::steady_clock::now();
            for (int r = 0; r < repeat; ++r) {
                for (Position& position : positions) {
                    moves.size = 0;
                    generate_legal_moves(position, moves);
                    if (incremental) encoder.reset(position);
                    for (const Move move : moves) {
                        if (incremental) encoder.on_do_move(position, move);
                        position.do_move(move);
                        sink += incremental ? encoder.score(position) : latent_refresh_score(*network_, position);
                        position.undo_move();
                        if (incremental) encoder.on_undo_move();
                        ++count;
                    }
                }
            }
            seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        }
        return py::make_tuple(count, seconds, sink);
    }

    // Benchmark, nnue_speed's workload: every position along each game (`fens[g]` then the
    // moves of games[g]), incremental then refresh; returns a dict of rates.
    py::dict time_games(const std::vector<std::string>& fens, const std::vector<std::vector<int>>& games,
                        int repeat) const {
        if (fens.size() != games.size()) throw std::invalid_argument("one FEN per game");
        std::vector<std::vector<Move>> lines;
        for (std::size_t g = 0; g < games.size(); ++g) {
            Position position = Position::from_fen(fens[g]);
            lines.emplace_back();
            for (const int bits : games[g]) {
                const Move move = legal_move(position, bits);
                position.do_move(move);
                lines.back().push_back(move);
            }
        }
        using Clock = std::chrono::steady_clock;
        long long evaluations = 0;
        double incremental_sum = 0.0, refresh_sum = 0.0, incremental_s = 0.0, refresh_s = 0.0;
        {
            py::gil_scoped_release release;
            LatentEncoder encoder(network_);
            for (int r = 0; r < repeat; ++r) {
                for (std::size_t g = 0; g < lines.size(); ++g) {
                    Position position = Position::from_fen(fens[g]);
                    auto start = Clock::now();
                    encoder.reset(position);
                    incremental_sum += encoder.score(position);
                    for (const Move move : lines[g]) {
                        encoder.on_do_move(position, move);
                        position.do_move(move);
                        incremental_sum += encoder.score(position);
                    }
                    incremental_s += std::chrono::duration<double>(Clock::now() - start).count();
                    Position again = Position::from_fen(fens[g]);
                    start = Clock::now();
                    refresh_sum += latent_refresh_score(*network_, again);
                    for (const Move move : lines[g]) {
                        again.do_move(move);
                        refresh_sum += latent_refresh_score(*network_, again);
                    }
                    refresh_s += std::chrono::duration<double>(Clock::now() - start).count();
                    evaluations += static_cast<long long>(lines[g].size()) + 1;
                }
            }
        }
        py::dict out;
        out["evaluations"] = evaluations;
        out["incremental_per_s"] = static_cast<double>(evaluations) / incremental_s;
        out["refresh_per_s"] = static_cast<double>(evaluations) / refresh_s;
        out["same_results"] = incremental_sum == refresh_sum;
        return out;
    }

  private:
    std::shared_ptr<const LatentNetwork> network_;
};

py::object optional_float(const std::optional<double>& value) {
    return value ? py::object(py::float_(*value)) : py::object(py::none());
}

py::dict result_to_dict(const LatentSearchResult& result) {
    py::dict out;
    out["move"] = result.move.is_none() ? py::object(py::none()) : py::object(py::str(result.move.to_uci()));
    out["value"] = result.value;
    py::list pv;
    for (const Move move : result.pv) pv.append(move.to_uci());
    out["pv"] = pv;
    out["depth"] = result.depth;
    out["mode"] = result.beam ? "beam" : "minimax";
    out["nodes"] = result.nodes;
    out["time_s"] = result.time_s;
    out["completed"] = result.completed;
    out["revisions"] = result.revisions;
    out["partial"] = result.partial;
    py::list roots;
    for (const LatentRootMove& root : result.root_moves)
        roots.append(py::make_tuple(root.move.to_uci(), root.static_value, optional_float(root.value), root.exact));
    out["root_moves"] = roots;
    return out;
}

class PyLatentSearch {
  public:
    PyLatentSearch(const PyLatentEncoder& encoder, const std::string& mode, int width, bool alpha_beta,
                   bool leaf_cutoffs, double draw_score, bool qs, bool revise, const std::string& evaluator,
                   const std::vector<double>& wdl_a, const std::vector<double>& wdl_b, bool partial,
                   bool reduce)
        : search_(encoder.network(),
                  make_config(mode, width, alpha_beta, leaf_cutoffs, draw_score, qs, revise, partial, reduce),
                  evaluator.empty() ? nullptr : make_evaluator(evaluator), LatentWdlModel{wdl_a, wdl_b}) {}

    py::dict search(const Position& position, const std::vector<std::uint64_t>& history_keys, int depth,
                    double deadline_s, double soft_deadline_s, long long max_nodes, bool exact_root,
                    bool iterate, const std::optional<py::function>& on_iteration,
                    const std::optional<py::function>& poll) {
        LatentSearchLimits limits;
        limits.depth = depth;
        limits.deadline_s = deadline_s;
        limits.soft_deadline_s = soft_deadline_s;
        limits.max_nodes = max_nodes;
        limits.exact_root = exact_root;
        limits.iterate = iterate;
        std::optional<py::error_already_set> failure;
        std::atomic<bool> failed{false};
        LatentIterationCallback callback;
        if (on_iteration) {
            const py::function& function = *on_iteration;
            callback = [&](const LatentSearchResult& result) {
                py::gil_scoped_acquire gil;
                if (failure) return;
                try {
                    function(result_to_dict(result));
                } catch (py::error_already_set& error) {
                    failure.emplace(std::move(error));
                    failed.store(true);
                }
            };
        }
        LatentStopPoll stop_poll;
        if (poll) {
            const py::function& function = *poll;
            stop_poll = [&]() {
                if (failed.load()) return true;
                py::gil_scoped_acquire gil;
                try {
                    return py::cast<bool>(function());
                } catch (py::error_already_set& error) {
                    failure.emplace(std::move(error));
                    failed.store(true);
                    return true;
                }
            };
        }
        if (busy_.exchange(true)) throw std::runtime_error("this LatentSearch is already searching");
        struct Release {
            std::atomic<bool>& flag;
            ~Release() { flag.store(false); }
        } release_busy{busy_};
        LatentSearchResult result;
        {
            py::gil_scoped_release release;
            result = search_.search(position, history_keys, limits, callback, stop_poll, &failed);
        }
        if (failure) throw std::move(*failure);
        return result_to_dict(result);
    }

    void clear_hints() {
        if (busy_.load()) throw std::runtime_error("this LatentSearch is searching");
        search_.clear_hints();
    }

  private:
    static LatentSearchConfig make_config(const std::string& mode, int width, bool alpha_beta,
                                          bool leaf_cutoffs, double draw_score, bool qs, bool revise,
                                          bool partial, bool reduce) {
        if (mode != "minimax" && mode != "beam")
            throw std::invalid_argument("unknown latent search mode '" + mode + "'");
        LatentSearchConfig config;
        config.beam = mode == "beam";
        config.width = width;
        config.alpha_beta = alpha_beta;
        config.leaf_cutoffs = leaf_cutoffs;
        config.draw_score = draw_score;
        config.qs = qs;
        config.revise = revise;
        config.partial = partial;
        config.reduce = reduce;
        return config;
    }

    LatentSearch search_;
    std::atomic<bool> busy_{false};
};

}  // namespace

void bind_latent(py::module_& module) {
    py::class_<PyLatentEncoder>(module, "LatentEncoder",
                                "The sparse contrastive encoder, quantised (see latent_encoder.h).")
        .def(py::init([](const std::string& feature_set, const FloatArray& ft_weight, const FloatArray& ft_bias,
                         const FloatArray& l2_weight, const FloatArray& l2_bias, const FloatArray& l2_stm,
                         const FloatArray& out_weight, const FloatArray& out_bias, const FloatArray& axis,
                         const std::string& source, int accumulator_scale) {
                 LatentWeights weights;
                 weights.feature_set = feature_set;
                 weights.l1 = static_cast<int>(ft_bias.size());
                 weights.hidden = static_cast<int>(l2_bias.size());
                 weights.dim = static_cast<int>(out_bias.size());
                 weights.ft_weight = to_vector(ft_weight);
                 weights.ft_bias = to_vector(ft_bias);
                 weights.l2_weight = to_vector(l2_weight);
                 weights.l2_bias = to_vector(l2_bias);
                 weights.l2_stm = to_vector(l2_stm);
                 weights.out_weight = to_vector(out_weight);
                 weights.out_bias = to_vector(out_bias);
                 weights.axis = to_vector(axis);
                 weights.source = source;
                 weights.accumulator_scale = accumulator_scale;
                 return PyLatentEncoder(make_latent_network(weights));
             }),
             py::arg("feature_set"), py::arg("ft_weight"), py::arg("ft_bias"), py::arg("l2_weight"),
             py::arg("l2_bias"), py::arg("l2_stm"), py::arg("out_weight"), py::arg("out_bias"), py::arg("axis"),
             py::arg("source") = "<memory>", py::arg("accumulator_scale") = 0)
        .def_static(
            "load",
            [](const std::string& path, const std::string& feature_set, const FloatArray& axis,
               int accumulator_scale) {
                return PyLatentEncoder(load_latent_network(path, feature_set, to_vector(axis), accumulator_scale));
            },
            py::arg("path"), py::arg("feature_set"), py::arg("axis"), py::arg("accumulator_scale") = 0,
            "Weights from a model directory's model.safetensors (feature set and axis from its config).")
        .def(
            "register_evaluator",
            [](const PyLatentEncoder& self, const std::string& key, bool logistic, double slope,
               double intercept) {
                register_latent_network(key, self.network(), LatentCalibration{logistic, slope, intercept});
            },
            py::arg("key"), py::arg("logistic"), py::arg("slope"), py::arg("intercept"),
            "Register this encoder as the evaluator 'latent:KEY' (as register_latent_evaluator does "
            "for a file): for an encoder assembled in Python, e.g. on an NNUE's feature transformer.")
        .def_property_readonly("l1", [](const PyLatentEncoder& self) { return self.network()->l1; })
        .def_property_readonly("hidden", [](const PyLatentEncoder& self) { return self.network()->hidden; })
        .def_property_readonly("dim", [](const PyLatentEncoder& self) { return self.network()->dim; })
        .def_property_readonly("accumulator_scale",
                               [](const PyLatentEncoder& self) { return self.network()->accumulator_scale; })
        .def_property_readonly("feature_set",
                               [](const PyLatentEncoder& self) { return self.network()->transformer->features.name(); })
        .def("score", &PyLatentEncoder::score, py::arg("position"), "Axis score (White's view), from scratch.")
        .def("embed", &PyLatentEncoder::embed, py::arg("position"), "(D,) unit embedding, from scratch.")
        .def("score_fens", &PyLatentEncoder::score_fens, py::arg("fens"))
        .def("embed_fens", &PyLatentEncoder::embed_fens, py::arg("fens"))
        .def("score_children", &PyLatentEncoder::score_children, py::arg("position"),
             py::arg("incremental") = true,
             "(move bits, scores) of every legal child, in python-chess's move order.")
        .def("line_scores", &PyLatentEncoder::line_scores, py::arg("position"), py::arg("moves"))
        .def("time_children", &PyLatentEncoder::time_children, py::arg("fens"), py::arg("incremental"),
             py::arg("repeat") = 1)
        .def("time_games", &PyLatentEncoder::time_games, py::arg("fens"), py::arg("games"), py::arg("repeat") = 1);

    py::class_<PyLatentSearch>(module, "LatentSearch", "The SOLIS latent search (see latent_search.h).")
        .def(py::init<const PyLatentEncoder&, const std::string&, int, bool, bool, double, bool, bool,
                      const std::string&, const std::vector<double>&, const std::vector<double>&, bool, bool>(),
             py::arg("encoder"), py::arg("mode") = "minimax", py::arg("width") = 3, py::arg("alpha_beta") = true,
             py::arg("leaf_cutoffs") = true, py::arg("draw_score") = 0.0, py::arg("qs") = false,
             py::arg("revise") = false, py::arg("evaluator") = "", py::arg("wdl_a") = std::vector<double>{},
             py::arg("wdl_b") = std::vector<double>{}, py::arg("partial") = false, py::arg("reduce") = false,
             "evaluator: '' (the encoder's axis scores the leaves) or an alpha-beta evaluator name (hce, "
             "pesto, nnue:PATH) whose centipawns wdl_a/wdl_b (latentchess.wdl.WdlModel) map to W - L.")
        .def("search", &PyLatentSearch::search, py::arg("position"), py::arg("history_keys"), py::arg("depth"),
             py::arg("deadline_s") = -1.0, py::arg("soft_deadline_s") = -1.0, py::arg("max_nodes") = -1,
             py::arg("exact_root") = false, py::arg("iterate") = true, py::arg("on_iteration") = py::none(),
             py::arg("poll") = py::none())
        .def("clear_hints", &PyLatentSearch::clear_hints);
}

}  // namespace latentchess::core
