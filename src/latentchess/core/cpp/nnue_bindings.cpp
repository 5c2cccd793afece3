// Python bindings of the NNUE part of the native core (called from bindings.cpp's module init).
//
// Invariants:
//  * Colours cross as 0 = White, 1 = Black; moves as 16-bit python-chess-compatible bits.
//  * NnueProbe drives an NnueEvaluator exactly as the search does (on_do_move before do_move,
//    on_undo_move after undo_move), so tests check the incremental accumulators the search uses.
//  * Bad network files and unsupported feature sets raise ValueError naming the file or set.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "movegen.h"
#include "nnue.h"
#include "nnue_features.h"
#include "nnue_file.h"
#include "position.h"

namespace py = pybind11;

namespace latentchess::core {

namespace {

py::array_t<std::int16_t> int16_array(const std::vector<std::int16_t>& values) {
    py::array_t<std::int16_t> array(static_cast<py::ssize_t>(values.size()));
    if (!values.empty()) std::memcpy(array.mutable_data(), values.data(), values.size() * 2);
    return array;
}

py::tuple accumulator_to_python(const NnueAccumulator& accumulator) {
    return py::make_tuple(int16_array(accumulator.values[White]), int16_array(accumulator.values[Black]));
}

// Drives an evaluator the way the search does, on its own copy of a position.
class NnueProbe {
  public:
    NnueProbe(std::shared_ptr<const NnueNetwork> network, const Position& position)
        : evaluator_(std::move(network)), position_(position) {
        evaluator_.reset(position_);
    }
    void push(int bits) {
        const Move move = Move::from_bits(static_cast<std::uint16_t>(bits));
        if (!position_.is_legal(move)) throw std::invalid_argument("illegal move " + move.to_uci());
        evaluator_.on_do_move(position_, move);
        position_.do_move(move);
    }
    void pop() {
        if (position_.ply_count() == 0) throw std::invalid_argument("nothing to pop");
        position_.undo_move();
        evaluator_.on_undo_move();
    }
    void push_null() {
        evaluator_.on_do_null_move();
        position_.do_null_move();
    }
    void pop_null() {
        position_.undo_null_move();
        evaluator_.on_undo_null_move();
    }
    int evaluate() { return evaluator_.evaluate(position_); }
    py::tuple accumulator() const { return accumulator_to_python(evaluator_.current_accumulator(position_)); }
    py::tuple refreshed() const {
        return accumulator_to_python(refresh_accumulator(evaluator_.network(), position_));
    }
    int refreshed_evaluate() const { return nnue_evaluate(evaluator_.network(), position_); }
    std::string fen() const { return position_.fen(); }

  private:
    NnueEvaluator evaluator_;
    Position position_;
};

// Evaluations per second along given games: incremental (do, evaluate, ..., undo all) against a
// full refresh at every position. Returns per-second rates by the clock (incremental_per_s,
// refresh_per_s) and by this thread's CPU time (*_per_cpu_s), and whether the sums agree.
py::dict nnue_speed(std::shared_ptr<const NnueNetwork> network, const std::vector<std::string>& fens,
                    const std::vector<std::vector<int>>& games, int repeats) {
    using Clock = std::chrono::steady_clock;
    NnueEvaluator evaluator(network);
    long long evaluations = 0, sum_incremental = 0, sum_refresh = 0;
    double seconds_incremental = 0.0, seconds_refresh = 0.0;
    double cpu_incremental = 0.0, cpu_refresh = 0.0;  // this thread's CPU time (load-proof)
    const auto cpu_now = [] {
        timespec now{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
        return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
    };
    {
        py::gil_scoped_release release;
        for (int r = 0; r < repeats; ++r) {
            for (std::size_t g = 0; g < games.size(); ++g) {
                Position position = Position::from_fen(fens[g]);
                auto start = Clock::now();
                double cpu_start = cpu_now();
                evaluator.reset(position);
                sum_incremental += evaluator.evaluate(position);
                for (const int bits : games[g]) {
                    const Move move = Move::from_bits(static_cast<std::uint16_t>(bits));
                    evaluator.on_do_move(position, move);
                    position.do_move(move);
                    sum_incremental += evaluator.evaluate(position);
                }
                seconds_incremental += std::chrono::duration<double>(Clock::now() - start).count();
                cpu_incremental += cpu_now() - cpu_start;
                Position again = Position::from_fen(fens[g]);
                start = Clock::now();
                cpu_start = cpu_now();
                sum_refresh += std::clamp(nnue_evaluate(*network, again), -kEvaluationBound + 1,
                                          kEvaluationBound - 1);
                for (const int bits : games[g]) {
                    again.do_move(Move::from_bits(static_cast<std::uint16_t>(bits)));
                    sum_refresh += std::clamp(nnue_evaluate(*network, again), -kEvaluationBound + 1,
                                              kEvaluationBound - 1);
                }
                seconds_refresh += std::chrono::duration<double>(Clock::now() - start).count();
                cpu_refresh += cpu_now() - cpu_start;
                evaluations += static_cast<long long>(games[g].size()) + 1;
            }
        }
    }
    py::dict out;
    out["evaluations"] = evaluations;
    out["incremental_per_s"] = evaluations / seconds_incremental;
    out["refresh_per_s"] = evaluations / seconds_refresh;
    out["incremental_per_cpu_s"] = evaluations / cpu_incremental;
    out["refresh_per_cpu_s"] = evaluations / cpu_refresh;
    out["same_results"] = sum_incremental == sum_refresh;
    return out;
}

// (n, 2, width) padded features of the positions (pad = N) in Index (int16 or int32).
template <typename Index>
py::array_t<Index> padded_features(const std::vector<std::string>& fens, const FeatureSet& set,
                                   int width) {
    py::array_t<Index> out({static_cast<py::ssize_t>(fens.size()), py::ssize_t{2},
                            static_cast<py::ssize_t>(width)});
    auto view = out.template mutable_unchecked<3>();
    std::vector<Position> positions;
    positions.reserve(fens.size());
    for (const auto& fen : fens) positions.push_back(Position::from_fen(fen));
    {
        py::gil_scoped_release release;
        for (std::size_t i = 0; i < positions.size(); ++i) {
            for (const Color perspective : {White, Black}) {
                const auto active = active_features(positions[i], perspective, set);
                if (static_cast<int>(active.size()) > width) {
                    throw std::invalid_argument("more active features than the width");
                }
                for (int k = 0; k < width; ++k) {
                    view(i, perspective, k) =
                        static_cast<Index>(k < static_cast<int>(active.size()) ? active[k] : set.size);
                }
            }
        }
    }
    return out;
}

}  // namespace

void bind_nnue(py::module_& m) {
    py::class_<NnueNetwork, std::shared_ptr<NnueNetwork>>(m, "NnueNetwork",
                                                            "A quantised NNUE (see nnue.h).")
        .def_static(
            "load",
            [](const std::string& path) {
                return std::const_pointer_cast<NnueNetwork>(load_nnue_network(path));
            },
            py::arg("path"))
        .def_property_readonly("feature_set", [](const NnueNetwork& n) { return n.features.name(); })
        .def_property_readonly("l1", [](const NnueNetwork& n) { return n.l1; })
        .def_property_readonly("l2", [](const NnueNetwork& n) { return n.l2; })
        .def_property_readonly("output_buckets", [](const NnueNetwork& n) { return n.output_buckets; })
        .def("evaluate", [](const NnueNetwork& n, const Position& p) { return nnue_evaluate(n, p); });

    m.def(
        "nnue_features",
        [](const Position& position, int perspective, const std::string& feature_set) {
            return active_features(position, Color(perspective & 1), FeatureSet::parse(feature_set));
        },
        py::arg("position"), py::arg("perspective"), py::arg("feature_set"),
        "Sorted active features of one perspective (0 = White, 1 = Black).");

    m.def(
        "nnue_features_batch",
        [](const std::vector<std::string>& fens, const std::string& feature_set, int width) -> py::object {
            const FeatureSet set = FeatureSet::parse(feature_set);
            if (set.size > 32767) return padded_features<std::int32_t>(fens, set, width);
            return padded_features<std::int16_t>(fens, set, width);
        },
        py::arg("fens"), py::arg("feature_set"), py::arg("width"),
        "(n, 2, width) padded features (pad = N), int16 (int32 above 32,767 features), as "
        "latentchess.nnue.dataset stores them.");

    py::class_<NnueProbe>(m, "NnueProbe", "An NnueEvaluator driven move by move (tests, benches).")
        .def(py::init([](std::shared_ptr<NnueNetwork> network, const Position& position) {
                 return NnueProbe(network, position);
             }),
             py::arg("network"), py::arg("position"))
        .def("push", &NnueProbe::push)
        .def("pop", &NnueProbe::pop)
        .def("push_null", &NnueProbe::push_null)
        .def("pop_null", &NnueProbe::pop_null)
        .def("evaluate", &NnueProbe::evaluate)
        .def("refreshed_evaluate", &NnueProbe::refreshed_evaluate)
        .def("accumulator", &NnueProbe::accumulator)
        .def("refreshed", &NnueProbe::refreshed)
        .def("fen", &NnueProbe::fen);

    m.def(
        "nnue_speed",
        [](std::shared_ptr<NnueNetwork> network, const std::vector<std::string>& fens,
           const std::vector<std::vector<int>>& games, int repeats) {
            return nnue_speed(network, fens, games, repeats);
        },
        py::arg("network"), py::arg("fens"), py::arg("games"), py::arg("repeats") = 1);
}

}  // namespace latentchess::core
