// Alpha-beta search: iterative deepening, aspiration windows, principal-variation negamax with a
// transposition table, quiescence, null-move pruning, late-move reductions and MultiPV.
//
// Invariants:
// - All per-search state (node counts, killers, PV table, evaluator stack) lives in a `Search`
//   object used by one thread; the transposition table, the move-ordering histories (butterfly,
//   continuation, counter-moves: halved before each search, cleared by new_game) and the
//   evaluators are owned by the `SearchEngine` and lent to one search at a time. So are the
//   tunable constants (SearchParameters, search_parameters.h): every thread's `Search` gets a
//   copy of the engine's, so all threads of a search use the same values. There are no mutable
//   globals.
// - Lazy SMP (SearchEngine::set_threads): a search with N threads runs N `Search` objects over
//   one shared transposition table (tt.h: lockless), each with its own evaluator (a clone),
//   history and killers. Thread 0, the main thread, runs on the caller's thread and alone owns
//   the clock, the Python poll, the iteration callback and MultiPV; helpers search one line with
//   no limit but the depth and the node limit (which counts every thread's nodes, so each thread
//   checks it), skip iterations in a staggered pattern (so they run ahead of the main thread at
//   different depths) and stop when the main thread returns. The move played is the main
//   thread's unless a helper completed a deeper iteration with a higher score (one line, no
//   depth limit), judged on the iterations helpers publish as they complete them: the main
//   thread never waits for a helper, so `stop` and the clock are answered as fast as with one
//   thread. Helpers told to stop are joined before anything else uses the engine (the next
//   search, new_game, set_threads, set_hash_megabytes, destruction). One thread behaves exactly
//   as before.
// - The root position is copied: the caller's position is never changed.
// - Scores are centipawns from the side to move's view; |score| >= kMateInMaxPly is a mate
//   (kMate - |score| plies away). Draws (repetition including the game history before the root,
//   fifty moves, insufficient material, stalemate) score kDraw.
// - Depth 1 always completes, so the move played is never unsearched. After it, a search stops
//   within ~256 nodes of a stop request or the hard time limit (~1024 nodes of a polled Python
//   event), at once at the node limit;
//   results of an interrupted iteration are used only for moves whose search completed.
// - Given the same position, limits without time, and the same table and history contents, a
//   one-thread search is deterministic (node counts included): `bench` relies on it. Several
//   threads are not (they race on the table).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "evaluate.h"
#include "movepick.h"
#include "position.h"
#include "search_constants.h"
#include "search_parameters.h"
#include "timeman.h"
#include "tt.h"
#include "types.h"

namespace latentchess::core {

struct PrincipalVariation {
  int multipv = 1;      // 1-based line number
  int score = 0;        // side to move's view
  Bound bound = Bound::Exact;  // Lower/Upper when the last iteration ended on a window edge
  std::vector<Move> moves;
};

struct IterationReport {
  int depth = 0;
  int seldepth = 0;
  std::uint64_t nodes = 0;
  std::int64_t time_ms = 0;
  int hashfull = 0;
  std::vector<PrincipalVariation> lines;  // best first
};

struct SearchResult {
  Move best_move = Move::none();
  Move ponder_move = Move::none();
  IterationReport last;  // the last completed iteration (lines may be empty: no legal move)
  std::uint64_t nodes = 0;  // all nodes, the interrupted iteration included
  std::int64_t time_ms = 0;
  std::int64_t soft_ms = -1;  // the time manager's budgets (-1: none), for measurements
  std::int64_t hard_ms = -1;
  int thread = 0;  // the thread whose result this is (0: the main thread)
};

using IterationCallback = std::function<void(const IterationReport&)>;
// Polled about every 1024 nodes; returning true stops the search (e.g. a Python event).
using StopPoll = std::function<bool()>;

class Search {
 public:
  // thread_index 0 is the main thread; a helper (> 0) should get limits without time or MultiPV
  // (helper_limits) and a stop flag the main thread's caller sets when it returns.
  // `parameters` is copied: every thread of a search gets the engine's values.
  Search(const Position& root, TranspositionTable& table, Evaluator& evaluator,
         SearchHistory& history, const SearchLimits& limits,
         TimeManager::Clock::time_point start, const std::atomic<bool>& stop_requested,
         StopPoll poll = nullptr, int thread_index = 0,
         const SearchParameters& parameters = SearchParameters{});
  Search(const Search&) = delete;
  Search& operator=(const Search&) = delete;

  SearchResult run(const IterationCallback& on_iteration);

  // The other threads of this search, whose node counts this one adds to its own (reports, the
  // node limit).
  void set_peers(std::vector<const Search*> peers) { peers_ = std::move(peers); }
  // This thread's nodes as last published (every kNodesPerCheck nodes); any thread may read it.
  std::uint64_t published_nodes() const { return published_nodes_.load(std::memory_order_relaxed); }
  // A helper's last completed iteration (report.depth 0: none yet) with its best move; any
  // thread may read it while the helper runs.
  struct Completed {
    IterationReport report;
    Move best_move = Move::none();
    Move ponder_move = Move::none();
  };
  Completed completed() const;
  // What a helper searches: the same root, depth cap and node limit, no clock, mate goal or
  // MultiPV (the main thread decides when all stop).
  static SearchLimits helper_limits(const SearchLimits& limits);
  // Whether helper `thread_index` (>= 1) leaves out iteration `depth`.
  static bool helper_skips(int thread_index, int depth);

 private:
  struct RootMove {
    explicit RootMove(Move root_move) : move(root_move) {}
    Move move;
    int score = -kInfinity;           // this iteration (-kInfinity: not completed or failed low)
    int previous_score = -kInfinity;  // last completed iteration
    Bound bound = Bound::Exact;
    std::vector<Move> pv;
    std::uint64_t nodes = 0;  // this search's nodes under this move, all iterations so far
  };
  struct PlyState {
    int static_eval = 0;
    Move killers[2] = {Move::none(), Move::none()};
    Move current = Move::none();
    int slot = -1;  // history_slot of `current` (-1: none, or a null move)
    bool null_move = false;
    Move excluded = Move::none();  // singular-extension verification: the move left out
    int double_extensions = 0;     // double singular extensions on the line to this ply
    bool table_pv = false;  // on the PV, or its table entry was stored from a PV node
    int cutoff_count = 0;   // beta cut-offs at this ply under the node two plies up
    bool quiet = false;     // `current` is a quiet move
    Bitboard threats = 0;   // the node's butterfly threats (quiet_context), for eval_history
  };

  // The root is searched by the same negamax as every other node, with its own moves (root_moves_
  // from the MultiPV line pv_index_ on, in their order) in place of the move picker's, nothing
  // before them (no table cut-off, pruning or extension decided there) and its results recorded
  // in root_moves_ instead of the table.
  enum class NodeType { Root, Interior };
  template <NodeType node_type>
  int negamax(int alpha, int beta, int depth, int ply, bool cut_node);
  int quiescence(int alpha, int beta, int ply);
  // The evaluator's static evaluation of the position: the table entry's when it holds one.
  int raw_evaluation(const ProbeResult& entry);
  // The position's static evaluation `raw`, scaled by the fifty-move counter (when
  // fifty_move_scaling is on), plus the correction history's share for its pawns.
  int corrected_evaluation(int raw) const;

  void do_move(Move move);
  void undo_move();
  void do_null_move();
  void undo_null_move();
  bool is_draw() const;
  bool has_non_pawn_material(Color color) const;
  bool should_stop();
  // Nodes of all threads of this search (the others' as last published).
  std::uint64_t total_nodes() const;
  void update_pv(int ply, Move move);
  // hybrid: the external order of the current node's moves (limits.move_orders), if any.
  const std::vector<Move>* external_order(int ply) const;
  static constexpr int kExternalOrderPlies = 2;
  // `threats`: the opponent's attacked squares at this node (butterfly_threats()), which index
  // the butterfly history.
  void update_quiet_stats(int ply, Move best, const Move* tried, int tried_count, int depth,
                          Bitboard threats);
  QuietContext quiet_context(int ply) const;
  // The capture history alone (quiescence, ProbCut): no continuation rows or counter-move.
  QuietContext capture_context() const;
  int slot_of(Move move) const;
  // The continuation slot of the index-th earlier move (1, 2, 4, 6 plies back from ply), or -1
  // where there is none (the start of the line, a null move, continuation_far off for 4 and 6).
  int continuation_slot(int ply, int index) const;
  // A cut-off's capture statistics (when the capture history has a weight): the cutting
  // capture (Move::none() when a quiet move cut) is rewarded, the captures tried before it
  // penalised.
  // The history bonus (malus when negated) of a cut-off at `depth`, shared by the quiet and
  // capture statistics.
  int history_bonus(int depth) const;
  // The squares the opponent attacks, for the butterfly table (threat_history), or 0.
  Bitboard butterfly_threats() const;
  // The continuation histories of ply's move (plies_[ply].slot) after the two moves before it.
  void update_continuation(int ply, int amount);
  void update_capture_stats(Move best, const Move* tried, int tried_count, int depth);
  IterationReport report(int depth, int lines) const;

  Position position_;
  TranspositionTable& table_;
  Evaluator& evaluator_;
  SearchLimits limits_;
  const SearchParameters parameters_;
  TimeManager time_;
  const std::atomic<bool>& stop_requested_;
  StopPoll poll_;

  std::vector<RootMove> root_moves_;
  std::array<PlyState, kMaxPly + 4> plies_{};
  std::array<std::array<Move, kMaxPly + 1>, kMaxPly + 1> pv_table_{};
  std::array<int, kMaxPly + 1> pv_length_{};
  std::array<std::array<std::uint8_t, 64>, 64> reductions_{};  // [depth][move number]
  SearchHistory& history_;
  std::uint64_t nodes_ = 0;
  std::atomic<std::uint64_t> published_nodes_{0};
  std::uint64_t peer_nodes_ = 0;  // the other threads' published nodes, refreshed every check
  std::vector<const Search*> peers_;
  mutable std::mutex completed_mutex_;  // guards completed_ (a helper writes it per iteration)
  Completed completed_;
  const int thread_index_ = 0;
  int seldepth_ = 0;
  int completed_depth_ = 0;
  int root_depth_ = 0;  // the iteration in progress
  int pv_index_ = 0;    // MultiPV: the line in progress (0-based)
  bool stopped_ = false;
};

// Owns the transposition table, the evaluators and the histories across searches (one UCI
// engine).
class SearchEngine {
 public:
  static constexpr int kMaxThreads = 1024;

  explicit SearchEngine(const std::string& evaluator = "hce", std::size_t hash_mb = 16);
  ~SearchEngine();
  SearchEngine(const SearchEngine&) = delete;
  SearchEngine& operator=(const SearchEngine&) = delete;

  // With threads() > 1, Lazy SMP: the caller's thread is the main thread; the helpers are
  // started for this search, told to stop when it returns and joined later (finish_helpers).
  SearchResult search(const Position& position, const SearchLimits& limits,
                      const IterationCallback& on_iteration, StopPoll poll = nullptr,
                      const std::atomic<bool>* stop_flag = nullptr);
  // Thread-safe: ends the running search (and only it) soon.
  void stop() { stop_requested_.store(true); }
  void new_game();
  void set_hash_megabytes(std::size_t megabytes) {
    finish_helpers();
    table_.resize(megabytes);
  }
  std::size_t hash_megabytes() const { return table_.megabytes(); }
  int hashfull() const { return table_.hashfull(); }
  std::string evaluator_name() const { return evaluators_[0]->name(); }
  // Search threads, 1..kMaxThreads (std::invalid_argument otherwise); not during a search. New
  // threads start with an empty history; fewer threads keep the first ones' histories.
  void set_threads(int threads);
  int threads() const { return static_cast<int>(evaluators_.size()); }
  // The tunable constants of every later search (all threads); std::invalid_argument for a
  // value validate() refuses (nothing changes then). Not during a search.
  void set_parameters(const SearchParameters& parameters);
  const SearchParameters& parameters() const { return parameters_; }

 private:
  // Stops and joins the last search's helpers (at once if they are done).
  void finish_helpers();

  TranspositionTable table_;
  // One evaluator and one history per thread (index 0: the main thread's).
  std::vector<std::unique_ptr<Evaluator>> evaluators_;
  std::vector<std::unique_ptr<SearchHistory>> histories_;
  SearchParameters parameters_;
  std::atomic<bool> stop_requested_{false};
  // The last multi-threaded search, alive until its helpers are joined: the main thread's
  // Search (helpers read its node count) and the helpers' Searches and threads.
  std::atomic<bool> helpers_stop_{false};
  std::unique_ptr<Search> main_search_;
  std::vector<std::unique_ptr<Search>> helper_searches_;
  std::vector<std::thread> helper_threads_;
};

}  // namespace latentchess::core
