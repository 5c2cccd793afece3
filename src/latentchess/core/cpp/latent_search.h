// The SOLIS latent search in the native core: the embedding-guided search of
// latentchess.search (tree.py, searcher.py), with the sparse encoder updated through do/undo.
//
// Invariants:
//  * Same tree and values as the Python search with the same scores: children in python-chess's
//    legal-move order, stably sorted by axis score (White's view); minimax expands the `width`
//    best children of each node (alpha-beta among them, fail-soft, best-first) and a node one ply
//    above the horizon is worth its best child's score; beam keeps the global `width` best lines
//    per level, terminal lines finish where they are, and the best final score wins.
//  * Exact terminals: a checkmate `ply` plies from the root is +-(kMateValue - ply) (White's
//    view); stalemate, insufficient material (no pawns, rooks or queens), the 50-move rule and
//    threefold repetition (the game history before the root included, Polyglot keys, as
//    tree._is_draw) are draw_score.
//  * What differs from the Python search (named, none changes a value or a move): no score cache
//    (an incremental embedding is cheaper than a hash lookup chain in Python); a node one ply
//    above the horizon scores its children one at a time (refutations first, MVV-LVA) and stops
//    at a cutoff, where Python scores chunks of `leaf_chunk`; node counts therefore differ.
//    Move hints (the best move found at a node, tried first next time) live in the LatentSearch
//    object across iterations and searches, as Searcher.move_hints.
//  * Iterative deepening: depth 1 always completes; a later iteration stops (and is discarded)
//    at the hard deadline, the node limit, the stop flag or when the poll says so, checked before
//    every scored position (the clock, the stop flag and the poll every 256 of them). No iteration starts
//    after the soft deadline, nor when the last one's time times its growth factor (the ratio of
//    the last two iterations' nodes, clamped to [1.5, 8]; 3 after the first) would pass the hard
//    deadline. A forced mate ends minimax deepening.
//  * One LatentSearch runs one search at a time (its own position and encoder); the network is
//    shared and immutable.
//  * Two additions to the paper's search, both off by default (off: the paper's search, exactly
//    as above), minimax only (beam ignores them):
//    - `qs`: every leaf is resolved by a quiescence search instead of its static score: stand
//      pat on the axis score (side to move's view), then captures and queen promotions that do
//      not lose material by SEE (see.h, as `ab`'s quiescence prunes them), MVV-LVA first, with
//      alpha-beta; in check no stand pat and every evasion (checkmate exact, stalemate the draw
//      score); at most `qs_plies` plies (then the static score). Leaf parents (and the root at
//      depth 1) then search every child that way, with alpha-beta, whatever leaf_cutoffs says.
//      Top-k never cuts a move that wins material by SEE (see_at_least(move, 1)): such moves
//      are expanded after the `width` best, in score order.
//    - `revise`: when an iteration's value falls below the previous iteration's by more than
//      `revise_margin` (axis units, the root mover's view; no mates), the same depth is
//      searched again with `revise_factor` times the width at the root and at ply 1; that result
//      replaces the narrow one (kept when the re-search is stopped).
//    - `partial` (time use): from depth 2 on, the root searches the last iteration's best move
//      first, and an iteration stopped by the clock, the node limit or the stop flag after that
//      move is done is kept: its best move is the best of the root moves it finished (each
//      finished value is exact or a bound that cannot beat the best, as in a full iteration; a
//      move that beat the first did so at the new depth). Its result says `partial` and its
//      depth is the stopped iteration's. And an iteration that is not predicted to finish by
//      the hard deadline (which ends the search without `partial`) starts all the same while
//      the soft deadline has not passed, and is stopped at the soft deadline (the hard one
//      when there is none): the search spends its budget instead of ending early. Iterations
//      predicted to finish run as without it.
//    - `reduce` (late-move reductions): at a node with at least 3 plies left, an expanded child
//      after the first two (in score order, the move hint first) that is not a capture or a
//      promotion and does not give check is searched with one ply less; only if that value
//      would be the node's new best (and inside its window) is it searched again at full depth,
//      and that value counts. The first two children, tactical moves and checks are never
//      reduced; a reduction can only miss a move whose shallower value looked worse.
//  * A leaf evaluator (the decomposition's instrument, off by default): with one, every score the
//    search reads (children's order, top-k, leaves, the quiescence stand pat) is the evaluator's
//    centipawns (the alpha-beta slot's Evaluator: hce, pesto, nnue) mapped to White's W - L by a
//    WDL model (LatentWdlModel, in [-1, 1] as the axis score), and the encoder is not used. The
//    tree, terminals and additions are the same; only the score differs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "evaluate.h"
#include "latent_encoder.h"
#include "position.h"
#include "types.h"

namespace latentchess::core {

inline constexpr double kLatentMateValue = 100.0;  // latentchess.search.base.MATE_VALUE
inline constexpr int kLatentMaxDepth = 64;          // latentchess.search.base.MAX_DEPTH

struct LatentSearchConfig {
    bool beam = false;          // mode "beam", else "minimax"
    int width = 3;              // k
    bool alpha_beta = true;     // cutoffs among expanded children
    bool leaf_cutoffs = true;   // Python's leaf_chunk > 0: leaf parents stop at a cutoff
    double draw_score = 0.0;
    bool qs = false;              // quiescence at the horizon; SEE winners survive top-k
    int qs_plies = 16;            // the quiescence search's depth cap
    bool revise = false;          // wider re-search of an iteration that fails low
    double revise_margin = 0.05;  // how far below the last iteration's value counts as a fail-low
    int revise_factor = 2;        // root and ply-1 width multiplier of the re-search
    bool partial = false;         // keep what a stopped iteration found; stop at the soft deadline
    bool reduce = false;          // late quiet moves searched a ply shallower first
};

// The WDL model of an evaluator's centipawns (latentchess.wdl.WdlModel, Stockfish 16's form):
// W = 1 / (1 + exp((a - v) / b)), L = 1 / (1 + exp((a + v) / b)), with a and b polynomials in
// x = clamp(material, 17, 78) / 58 (pawns 1, knights and bishops 3, rooks 5, queens 9).
struct LatentWdlModel {
    std::vector<double> a, b;  // coefficients, lowest power first; both non-empty
    // W - L from White's view for `cp`, the side to move's centipawns on `position`.
    double white_score(const Position& position, int cp) const;
};

struct LatentSearchLimits {
    int depth = 6;
    double deadline_s = -1.0;       // hard limit, seconds from the call; < 0: none
    double soft_deadline_s = -1.0;  // no new iteration after it; < 0: none
    long long max_nodes = -1;       // positions scored, all iterations; < 0: none
    bool exact_root = false;        // exact values for every expanded root move
    bool iterate = true;            // false: search `depth` directly
};

struct LatentRootMove {
    Move move;
    double static_value = 0.0;
    std::optional<double> value;
    bool exact = false;
};

struct LatentSearchResult {
    Move move;  // none only without legal moves
    double value = 0.0;
    std::vector<Move> pv;
    int depth = 0;
    bool beam = false;
    long long nodes = 0;  // positions scored (embedded), all iterations
    double time_s = 0.0;
    bool completed = true;
    int revisions = 0;  // iterations re-searched wider (revise), all iterations
    bool partial = false;  // the last iteration was stopped and its finished root moves kept
    int root_searched = 0;  // root moves the last iteration finished (expanded ones)
    std::vector<LatentRootMove> root_moves;
};

using LatentIterationCallback = std::function<void(const LatentSearchResult&)>;
using LatentStopPoll = std::function<bool()>;

// Children of `position` in python-chess's legal-move order (the order ties keep).
void python_chess_move_order(const Position& position, MoveList& moves);

class LatentSearch {
  public:
    // With `leaf_evaluator`, leaves are scored by it through `wdl` instead of by the encoder.
    LatentSearch(std::shared_ptr<const LatentNetwork> network, LatentSearchConfig config,
                 std::unique_ptr<Evaluator> leaf_evaluator = nullptr, LatentWdlModel wdl = {});

    // `history_keys`: Polyglot keys of the positions since the last irreversible move, the root
    // included, with repeats (empty: the root alone).
    LatentSearchResult search(const Position& root, const std::vector<std::uint64_t>& history_keys,
                              const LatentSearchLimits& limits,
                              const LatentIterationCallback& on_iteration = {},
                              const LatentStopPoll& poll = {},
                              const std::atomic<bool>* stop = nullptr);

    void clear_hints() { hints_.clear(); }
    const LatentSearchConfig& config() const { return config_; }

  private:
    struct Child {
        Move move;
        std::uint64_t key = 0;
        double value = 0.0;
        bool terminal = false;
    };
    struct Line {  // a beam entry
        std::vector<Move> moves;
        std::vector<std::uint64_t> path;
        double value = 0.0;
        bool terminal = false;
        int root_index = 0;
    };
    struct Aborted {};

    // Fills `result` as root moves finish (a stopped iteration leaves what it finished there);
    // `first`: a root move searched before the others (none: score order).
    void run_iteration(int depth, bool exact_root, LatentSearchResult& result, Move first = Move());
    LatentSearchResult beam(const std::vector<Child>& children, int depth);
    // Values `move` from the current node (ply `ply`, `path` its keys after the root).
    // With `resolve`, a non-terminal child is worth its quiescence value in (alpha, beta).
    Child value_child(Move move, int ply, bool parent_white, bool resolve = false,
                      double alpha = 0.0, double beta = 0.0);
    double quiescence(int ply, int qply, double alpha, double beta);
    int width_at(int ply) const { return wide_width_ > 0 && ply <= 1 ? wide_width_ : config_.width; }
    // The indices of `children` (sorted best first) that a node at `ply` expands.
    std::vector<std::size_t> expanded(const std::vector<Child>& children, int ply) const;
    std::vector<Child> children_of(int ply);
    double minimax(int ply, int depth, double alpha, double beta, std::vector<Move>& pv);
    double leaf_parent(int ply, double alpha, double beta, std::vector<Move>& pv);
    double score_current();
    void check_abort();
    void do_move(Move move);
    void undo_move();
    void reset_scorer();
    bool is_history_draw(int clock, std::uint64_t key) const;

    std::shared_ptr<const LatentNetwork> network_;
    LatentSearchConfig config_;
    LatentEncoder encoder_;
    std::unique_ptr<Evaluator> evaluator_;  // the leaf evaluator, or null: the encoder's axis
    LatentWdlModel wdl_;
    std::unordered_map<std::uint64_t, Move> hints_;
    // Per search:
    std::optional<Position> position_;
    std::unordered_map<std::uint64_t, int> history_;
    std::vector<std::uint64_t> path_;  // keys of the positions after the root up to the node
    const LatentSearchLimits* limits_ = nullptr;
    const LatentStopPoll* poll_ = nullptr;
    const std::atomic<bool>* stop_ = nullptr;
    std::chrono::steady_clock::time_point started_;
    bool abortable_ = false;
    double abort_at_s_ = -1.0;  // when a search stops an iteration, seconds from the call; < 0: never
    int wide_width_ = 0;  // > 0 while a revise re-search runs
    long long nodes_before_ = 0;
    long long nodes_ = 0;
};

}  // namespace latentchess::core
