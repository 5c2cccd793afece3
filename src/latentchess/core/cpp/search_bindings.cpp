// The search section of the Python binding: SearchEngine, StopFlag, limits and results.
//
// Invariants:
// - The search runs with the GIL released; Python code (the per-iteration callback, the stop
//   poll) runs only with the GIL re-acquired, on the searching thread.
// - An exception raised by the Python callback stops the search and is re-raised to the caller
//   once the search has returned (the C++ search never unwinds through Python frames).
// - Moves cross the boundary as UCI strings; scores as side-to-move centipawns plus an optional
//   "mate in N moves" (positive: the side to move mates).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "evaluate.h"
#include "latent_encoder.h"
#include "position.h"
#include "search.h"
#include "see.h"
#include "timeman.h"

namespace py = pybind11;

namespace latentchess::core {
namespace {

// A stop request shared between the thread that asks and the thread that searches.
struct StopFlag {
  std::shared_ptr<std::atomic<bool>> flag = std::make_shared<std::atomic<bool>>(false);
};

const char* bound_name(Bound bound) {
  switch (bound) {
    case Bound::Lower: return "lower";
    case Bound::Upper: return "upper";
    default: return "exact";
  }
}

py::dict line_to_dict(const PrincipalVariation& line) {
  py::dict out;
  out["multipv"] = line.multipv;
  if (std::abs(line.score) >= kMateInMaxPly) {
    const int plies = kMate - std::abs(line.score);
    const int moves = (plies + 1) / 2;
    out["mate"] = line.score > 0 ? moves : -moves;
    out["cp"] = py::none();
  } else {
    out["mate"] = py::none();
    out["cp"] = line.score;
  }
  out["bound"] = bound_name(line.bound);
  py::list moves;
  for (Move move : line.moves) moves.append(move.to_uci());
  out["pv"] = moves;
  return out;
}

py::dict report_to_dict(const IterationReport& report) {
  py::dict out;
  out["depth"] = report.depth;
  out["seldepth"] = report.seldepth;
  out["nodes"] = report.nodes;
  out["time_ms"] = report.time_ms;
  out["hashfull"] = report.hashfull;
  py::list lines;
  for (const PrincipalVariation& line : report.lines) lines.append(line_to_dict(line));
  out["lines"] = lines;
  return out;
}

// Every field of SearchParameters by name: the one list the conversions below read (built once,
// never changed).
using ParameterField = int SearchParameters::*;
const std::vector<std::pair<const char*, ParameterField>>& parameter_fields() {
  static const std::vector<std::pair<const char*, ParameterField>> fields = {
      {"reverse_futility_margin", &SearchParameters::reverse_futility_margin},
      {"reverse_futility_depth", &SearchParameters::reverse_futility_depth},
      {"null_move_base_reduction", &SearchParameters::null_move_base_reduction},
      {"null_move_depth_divisor", &SearchParameters::null_move_depth_divisor},
      {"null_move_eval_divisor", &SearchParameters::null_move_eval_divisor},
      {"null_move_eval_max_reduction", &SearchParameters::null_move_eval_max_reduction},
      {"futility_base", &SearchParameters::futility_base},
      {"futility_per_depth", &SearchParameters::futility_per_depth},
      {"capture_futility_margin", &SearchParameters::capture_futility_margin},
      {"futility_depth", &SearchParameters::futility_depth},
      {"late_move_pruning_base", &SearchParameters::late_move_pruning_base},
      {"see_tactical_per_depth", &SearchParameters::see_tactical_per_depth},
      {"see_quiet_per_depth_squared", &SearchParameters::see_quiet_per_depth_squared},
      {"lmr_base_percent", &SearchParameters::lmr_base_percent},
      {"lmr_divisor_percent", &SearchParameters::lmr_divisor_percent},
      {"lmr_history_divisor", &SearchParameters::lmr_history_divisor},
      {"lmr_root", &SearchParameters::lmr_root},
      {"lmr_table_pv", &SearchParameters::lmr_table_pv},
      {"lmr_cutoff_count", &SearchParameters::lmr_cutoff_count},
      {"lmr_deeper_margin", &SearchParameters::lmr_deeper_margin},
      {"futility_lmr_depth", &SearchParameters::futility_lmr_depth},
      {"fail_low_prior_bonus", &SearchParameters::fail_low_prior_bonus},
      {"threat_history", &SearchParameters::threat_history},
      {"continuation_far", &SearchParameters::continuation_far},
      {"lmr_cut_node", &SearchParameters::lmr_cut_node},
      {"lmr_table_capture", &SearchParameters::lmr_table_capture},
      {"check_extension", &SearchParameters::check_extension},
      {"reverse_futility_blend", &SearchParameters::reverse_futility_blend},
      {"iir_depth", &SearchParameters::iir_depth},
      {"aspiration_fail_high_depth", &SearchParameters::aspiration_fail_high_depth},
      {"quiescence_stand_pat_blend", &SearchParameters::quiescence_stand_pat_blend},
      {"threat_order", &SearchParameters::threat_order},
      {"check_order", &SearchParameters::check_order},
      {"singular_margin_per_depth", &SearchParameters::singular_margin_per_depth},
      {"singular_min_depth", &SearchParameters::singular_min_depth},
      {"singular_double_margin", &SearchParameters::singular_double_margin},
      {"singular_negative_extension", &SearchParameters::singular_negative_extension},
      {"probcut_margin", &SearchParameters::probcut_margin},
      {"razoring_margin", &SearchParameters::razoring_margin},
      {"table_cut_history", &SearchParameters::table_cut_history},
      {"eval_history", &SearchParameters::eval_history},
      {"history_bonus_per_depth_squared", &SearchParameters::history_bonus_per_depth_squared},
      {"history_bonus_per_depth", &SearchParameters::history_bonus_per_depth},
      {"history_bonus_max", &SearchParameters::history_bonus_max},
      {"quiescence_delta_margin", &SearchParameters::quiescence_delta_margin},
      {"quiescence_table_eval", &SearchParameters::quiescence_table_eval},
      {"capture_history_divisor", &SearchParameters::capture_history_divisor},
      {"fifty_move_scaling", &SearchParameters::fifty_move_scaling},
      {"correction_history_percent", &SearchParameters::correction_history_percent},
      {"aspiration_delta", &SearchParameters::aspiration_delta},
      {"time_unstable_percent", &SearchParameters::time_unstable_percent},
      {"time_score_drop_percent", &SearchParameters::time_score_drop_percent},
      {"time_score_drop", &SearchParameters::time_score_drop},
      {"time_moves_to_go", &SearchParameters::time_moves_to_go},
      {"time_iteration_percent", &SearchParameters::time_iteration_percent},
      {"time_node_share_percent", &SearchParameters::time_node_share_percent},
      {"time_opening_percent", &SearchParameters::time_opening_percent},
      {"time_opening_plies", &SearchParameters::time_opening_plies},
  };
  return fields;
}

py::dict parameters_to_dict(const SearchParameters& parameters) {
  py::dict out;
  for (const auto& [name, field] : parameter_fields()) out[name] = parameters.*field;
  return out;
}

// `base` with the values `changes` names; ValueError for an unknown name or a refused value.
SearchParameters parameters_from_dict(SearchParameters base, const py::dict& changes) {
  for (const auto& [key, value] : changes) {
    const std::string name = py::cast<std::string>(key);
    const auto& fields = parameter_fields();
    const auto found = std::find_if(fields.begin(), fields.end(),
                                    [&](const auto& each) { return name == each.first; });
    if (found == fields.end()) throw py::value_error("unknown search parameter '" + name + "'");
    base.*(found->second) = py::cast<int>(value);
  }
  try {
    base.validate();
  } catch (const std::invalid_argument& error) {
    throw py::value_error(error.what());
  }
  return base;
}

py::dict run_search(SearchEngine& engine, const Position& position, const SearchLimits& limits,
                    const std::optional<py::function>& on_iteration,
                    const std::optional<StopFlag>& stop, const std::optional<py::function>& poll) {
  std::optional<py::error_already_set> failure;
  std::atomic<bool> failed{false};
  IterationCallback callback;
  if (on_iteration) {
    const py::function& function = *on_iteration;
    callback = [&](const IterationReport& report) {
      py::gil_scoped_acquire gil;
      if (failure) return;
      try {
        function(report_to_dict(report));
      } catch (py::error_already_set& error) {
        failure.emplace(std::move(error));
        failed.store(true);
      }
    };
  }
  StopPoll stop_poll = [&]() { return failed.load(); };
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
  SearchResult result;
  {
    py::gil_scoped_release release;
    result = engine.search(position, limits, callback, stop_poll,
                           stop ? stop->flag.get() : nullptr);
  }
  if (failure) throw std::move(*failure);
  py::dict out = report_to_dict(result.last);
  out["bestmove"] = result.best_move.is_none() ? py::object(py::none())
                                               : py::object(py::str(result.best_move.to_uci()));
  out["ponder"] = result.ponder_move.is_none() ? py::object(py::none())
                                               : py::object(py::str(result.ponder_move.to_uci()));
  out["total_nodes"] = result.nodes;
  out["total_time_ms"] = result.time_ms;
  out["soft_ms"] = result.soft_ms;
  out["hard_ms"] = result.hard_ms;
  return out;
}

}  // namespace

void bind_search(py::module_& module) {
  py::class_<StopFlag>(module, "StopFlag", "A stop request for a running native search.")
      .def(py::init<>())
      .def("set", [](StopFlag& self) { self.flag->store(true); })
      .def("clear", [](StopFlag& self) { self.flag->store(false); })
      .def("is_set", [](const StopFlag& self) { return self.flag->load(); });

  py::class_<SearchLimits>(module, "SearchLimits", "Limits of one search (see timeman.h).")
      .def(py::init<>())
      .def_readwrite("depth", &SearchLimits::depth)
      .def_readwrite("nodes", &SearchLimits::nodes)
      .def_readwrite("movetime_ms", &SearchLimits::movetime_ms)
      .def_readwrite("time_left_ms", &SearchLimits::time_left_ms)
      .def_readwrite("increment_ms", &SearchLimits::increment_ms)
      .def_readwrite("moves_to_go", &SearchLimits::moves_to_go)
      .def_readwrite("mate_in", &SearchLimits::mate_in)
      .def_readwrite("infinite", &SearchLimits::infinite)
      .def_readwrite("multipv", &SearchLimits::multipv)
      .def_readwrite("move_overhead_ms", &SearchLimits::move_overhead_ms)
      .def_readwrite("spent_ms", &SearchLimits::spent_ms)
      // ---- hybrid additions: moves as 16-bit integers (latentchess.core.board.move_to_bits) ----
      .def_property(
          "search_moves",
          [](const SearchLimits& self) {
            std::vector<std::uint16_t> out;
            for (Move move : self.search_moves) out.push_back(move.bits());
            return out;
          },
          [](SearchLimits& self, const std::vector<std::uint16_t>& moves) {
            self.search_moves.clear();
            for (std::uint16_t bits : moves) self.search_moves.push_back(Move::from_bits(bits));
          })
      .def(
          "set_move_order",
          [](SearchLimits& self, std::uint64_t key, const std::vector<std::uint16_t>& moves) {
            std::vector<Move>& order = self.move_orders[key];
            order.clear();
            for (std::uint16_t bits : moves) order.push_back(Move::from_bits(bits));
          },
          py::arg("key"), py::arg("moves"),
          "External order (best first) of the moves of the position with this Polyglot key.")
      .def_property_readonly("move_order_count",
                             [](const SearchLimits& self) { return self.move_orders.size(); })
      .def_readwrite("reverse_futility_pruning", &SearchLimits::reverse_futility_pruning)
      .def_readwrite("late_move_pruning", &SearchLimits::late_move_pruning)
      .def_readwrite("see_pruning", &SearchLimits::see_pruning)
      .def_readwrite("futility_pruning", &SearchLimits::futility_pruning)
      .def_readwrite("singular_extensions", &SearchLimits::singular_extensions);

  py::class_<SearchEngine>(module, "SearchEngine",
                           "Alpha-beta search owning its transposition table and evaluator.")
      .def(py::init([](const std::string& evaluator, std::size_t hash_mb, int threads) {
             try {
               auto engine = std::make_unique<SearchEngine>(evaluator, hash_mb);
               engine->set_threads(threads);
               return engine;
             } catch (const std::invalid_argument& error) {
               throw py::value_error(error.what());
             }
           }),
           py::arg("evaluator") = "hce", py::arg("hash_mb") = 16, py::arg("threads") = 1)
      .def("search", &run_search, py::arg("position"), py::arg("limits"),
           py::arg("on_iteration") = py::none(), py::arg("stop") = py::none(),
           py::arg("poll") = py::none())
      .def("new_game", &SearchEngine::new_game)
      .def_property(
          "parameters",
          [](const SearchEngine& self) { return parameters_to_dict(self.parameters()); },
          [](SearchEngine& self, const py::dict& changes) {
            self.set_parameters(parameters_from_dict(self.parameters(), changes));
          },
          "The tunable search constants (search_parameters.h) by name; assigning a dict changes "
          "the values it names for every later search and thread.")
      .def("set_hash_megabytes", &SearchEngine::set_hash_megabytes, py::arg("megabytes"))
      .def_property_readonly("hash_megabytes", &SearchEngine::hash_megabytes)
      .def_property_readonly("hashfull", &SearchEngine::hashfull)
      .def_property_readonly("evaluator", &SearchEngine::evaluator_name)
      .def_property(
          "threads", &SearchEngine::threads,
          [](SearchEngine& self, int threads) {
            try {
              self.set_threads(threads);
            } catch (const std::invalid_argument& error) {
              throw py::value_error(error.what());
            }
          },
          "Search threads (Lazy SMP; 1: the single-threaded, deterministic search).");

  module.def(
      "evaluate",
      [](const Position& position, const std::string& evaluator) {
        std::unique_ptr<Evaluator> instance;
        try {
          instance = make_evaluator(evaluator);
        } catch (const std::invalid_argument& error) {
          throw py::value_error(error.what());
        }
        instance->reset(position);
        return instance->evaluate(position);
      },
      py::arg("position"), py::arg("evaluator") = "hce",
      "Static evaluation (centipawns, side to move's view).");
  module.def(
      "evaluate_along",
      [](const Position& root, const std::vector<int>& moves, const std::string& evaluator) {
        std::unique_ptr<Evaluator> incremental, fresh;
        try {
          incremental = make_evaluator(evaluator);
          fresh = make_evaluator(evaluator);
        } catch (const std::invalid_argument& error) {
          throw py::value_error(error.what());
        }
        Position position = root;
        incremental->reset(position);
        std::vector<int> updated{incremental->evaluate(position)}, refreshed;
        fresh->reset(position);
        refreshed.push_back(fresh->evaluate(position));
        for (const int bits : moves) {
          const Move move = Move::from_bits(static_cast<std::uint16_t>(bits & 0xFFFF));
          if (!position.is_legal(move)) throw MoveError("illegal move " + move.to_uci() + " in '" + position.fen() + "'");
          incremental->on_do_move(position, move);
          position.do_move(move);
          updated.push_back(incremental->evaluate(position));
          fresh->reset(position);
          refreshed.push_back(fresh->evaluate(position));
        }
        return py::make_tuple(updated, refreshed);
      },
      py::arg("position"), py::arg("moves"), py::arg("evaluator") = "hce",
      "Evaluations along `moves` from `position`: updated move by move (as the search does) and "
      "from scratch at each position; equal lists when the incremental update is right.");
  module.def(
      "register_latent_evaluator",
      [](const std::string& key, const std::string& path, const std::string& feature_set,
         const std::vector<float>& axis, bool logistic, double slope, double intercept,
         int accumulator_scale) {
        try {
          register_latent_network(key, load_latent_network(path, feature_set, axis, accumulator_scale),
                                  LatentCalibration{logistic, slope, intercept});
        } catch (const std::invalid_argument& error) {
          throw py::value_error(error.what());
        }
      },
      py::arg("key"), py::arg("path"), py::arg("feature_set"), py::arg("axis"), py::arg("logistic"),
      py::arg("slope"), py::arg("intercept"), py::arg("accumulator_scale") = 0,
      "Load the sparse encoder in `path` and register it as the evaluator 'latent:KEY' "
      "(latent_encoder.h); `logistic` false: the linear calibration (s + 1) / 2.");
  module.def(
      "latent_evaluator_walk",
      [](const Position& root, const std::vector<int>& steps, const std::string& evaluator) {
        std::unique_ptr<Evaluator> made;
        try {
          made = make_evaluator(evaluator);
        } catch (const std::invalid_argument& error) {
          throw py::value_error(error.what());
        }
        auto* latent = dynamic_cast<LatentEvaluator*>(made.get());
        if (latent == nullptr) throw py::value_error("'" + evaluator + "' is not a latent evaluator");
        Position position = root;
        latent->reset(position);
        std::vector<std::pair<bool, Move>> done;  // (null move, move)
        std::vector<float> incremental, refreshed;
        std::vector<int> centipawns;
        bool accumulators_equal = true;
        const auto record = [&]() {
          incremental.push_back(latent->axis_score(position));
          refreshed.push_back(latent_refresh_score(latent->network(), position));
          centipawns.push_back(latent->evaluate(position));
          const NnueAccumulator ours = latent->current_accumulator(position);
          const NnueAccumulator fresh = refresh_accumulator(*latent->network().transformer, position);
          accumulators_equal = accumulators_equal && ours.values[White] == fresh.values[White] &&
                               ours.values[Black] == fresh.values[Black];
        };
        record();
        for (const int step : steps) {
          if (step == -1 || step == -3) {  // undo the last move (-1) or null move (-3)
            if (done.empty() || done.back().first != (step == -3)) throw py::value_error("bad undo step");
            if (step == -3) {
              position.undo_null_move();
              latent->on_undo_null_move();
            } else {
              position.undo_move();
              latent->on_undo_move();
            }
            done.pop_back();
          } else if (step == -2) {  // null move
            if (position.in_check()) throw py::value_error("null move in check in '" + position.fen() + "'");
            latent->on_do_null_move();
            position.do_null_move();
            done.emplace_back(true, Move());
          } else {
            const Move move = Move::from_bits(static_cast<std::uint16_t>(step & 0xFFFF));
            if (!position.is_legal(move)) throw MoveError("illegal move " + move.to_uci() + " in '" + position.fen() + "'");
            latent->on_do_move(position, move);
            position.do_move(move);
            done.emplace_back(false, move);
          }
          record();
        }
        return py::make_tuple(incremental, refreshed, centipawns, accumulators_equal);
      },
      py::arg("position"), py::arg("steps"), py::arg("evaluator"),
      "Walk a latent evaluator through `steps` (16-bit moves; -1 undo a move, -2 null move, -3 "
      "undo a null move): after each, (the axis score from the incremental accumulators, the "
      "refresh's, the evaluation in centipawns, whether every accumulator equalled the refresh's).");
  module.def(
      "search_parameter_defaults", []() { return parameters_to_dict(SearchParameters{}); },
      "The tunable search constants' defaults by name, in declaration order.");
  module.def(
      "see_at_least",
      [](const Position& position, const std::string& uci, int threshold) {
        return see_at_least(position, position.parse_uci(uci), threshold);
      },
      py::arg("position"), py::arg("move"), py::arg("threshold"),
      "Whether the static exchange after a legal move gains at least `threshold` centipawns.");
  module.def(
      "time_budget",
      [](const SearchLimits& limits, const py::dict& parameters, int game_ply) {
        const TimeManager manager(limits, TimeManager::Clock::now(),
                                  parameters_from_dict(SearchParameters{}, parameters), game_ply);
        return py::make_tuple(manager.soft_ms(), manager.hard_ms());
      },
      py::arg("limits"), py::arg("parameters") = py::dict(), py::arg("game_ply") = 0,
      "(soft_ms, hard_ms) the time manager gives a search under these limits (-1: no limit), "
      "with the search parameters `parameters` changes from their defaults, at game ply "
      "`game_ply` (plies played since the game's start).");
}

}  // namespace latentchess::core
