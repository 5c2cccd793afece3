// The SOLIS latent search in the native core; see latent_search.h.
#include "latent_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "movegen.h"
#include "see.h"

namespace latentchess::core {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr std::size_t kMaxHints = 1 << 20;  // the hint table is cleared when it grows past this

bool is_mate_value(double value) { return std::abs(value) > kLatentMateValue / 2; }

bool is_en_passant(const Position& position, Move move) {
    return position.piece_type_on(move.from()) == Pawn && file_of(move.from()) != file_of(move.to()) &&
           position.piece_type_on(move.to()) == NoPieceType;
}

// python-chess generates: (in check: king moves first), other pieces by from-square descending
// (targets descending), castling, pawn captures, single pushes, double pushes, en passant;
// promotions queen, rook, bishop, knight. Smaller key = earlier.
int python_chess_key(const Position& position, Move move, bool in_check) {
    const Square from = move.from(), to = move.to();
    const PieceType type = position.piece_type_on(from);
    int category;
    if (type == King && in_check) category = 0;
    else if (type == King && position.is_castling(move)) category = 2;
    else if (type != Pawn) category = 1;
    else if (is_en_passant(position, move)) category = 6;
    else if (file_of(from) != file_of(to)) category = 3;
    else if (to - from == 16 || from - to == 16) category = 5;
    else category = 4;
    return (category << 20) | ((63 - from) << 12) | ((63 - to) << 4) | (7 - move.promotion());
}

// tree._refutation_order: captures of valuable pieces by cheap pieces first (MVV-LVA).
int refutation_key(const Position& position, Move move) {
    static constexpr int kVictim[7] = {0, 1, 3, 3, 5, 9, 0};
    int victim = kVictim[position.piece_type_on(move.to())];
    if (victim == 0 && is_en_passant(position, move)) victim = 1;
    const int promotion = move.promotion() == Queen ? 8 : 0;
    const int attacker = position.piece_type_on(move.from());
    return -(victim + promotion) * 8 + attacker;
}

bool is_capture(const Position& position, Move move) {
    return position.piece_type_on(move.to()) != NoPieceType || is_en_passant(position, move);
}

// A capture or promotion that wins material by SEE: top-k keeps it (qs).
bool wins_material(const Position& position, Move move) {
    return (is_capture(position, move) || move.promotion() != NoPieceType) && see_at_least(position, move, 1);
}

bool insufficient(const Position& position) {
    const bool no_heavy = (position.pieces(Pawn) | position.pieces(Rook) | position.pieces(Queen)) == 0;
    return no_heavy && position.is_insufficient_material();
}

}  // namespace

void python_chess_move_order(const Position& position, MoveList& moves) {
    generate_legal_moves(position, moves);
    const bool in_check = position.in_check();
    std::sort(moves.begin(), moves.end(), [&](Move a, Move b) {
        return python_chess_key(position, a, in_check) < python_chess_key(position, b, in_check);
    });
}

double LatentWdlModel::white_score(const Position& position, int cp) const {
    const int material = popcount(position.pieces(Pawn)) +
                         3 * popcount(position.pieces(Knight) | position.pieces(Bishop)) +
                         5 * popcount(position.pieces(Rook)) + 9 * popcount(position.pieces(Queen));
    const double x = std::clamp(material, 17, 78) / 58.0;
    auto poly = [x](const std::vector<double>& c) {
        double value = 0.0;
        for (std::size_t i = c.size(); i-- > 0;) value = value * x + c[i];
        return value;
    };
    const double a = poly(this->a);
    const double b = std::max(poly(this->b), 1e-3);
    const double v = position.side_to_move() == White ? cp : -cp;
    const double win = 1.0 / (1.0 + std::exp(std::clamp((a - v) / b, -700.0, 700.0)));
    const double loss = 1.0 / (1.0 + std::exp(std::clamp((a + v) / b, -700.0, 700.0)));
    return win - loss;
}

LatentSearch::LatentSearch(std::shared_ptr<const LatentNetwork> network, LatentSearchConfig config,
                           std::unique_ptr<Evaluator> leaf_evaluator, LatentWdlModel wdl)
    : network_(std::move(network)),
      config_(config),
      encoder_(network_),
      evaluator_(std::move(leaf_evaluator)),
      wdl_(std::move(wdl)) {
    if (evaluator_ && (wdl_.a.empty() || wdl_.b.empty()))
        throw std::invalid_argument("a latent search leaf evaluator needs a WDL model (a and b)");
    if (config_.width < 1) throw std::invalid_argument("latent search width must be at least 1");
    if (!(config_.draw_score >= -1.0 && config_.draw_score <= 1.0))
        throw std::invalid_argument("latent search draw_score must lie in [-1, 1]");
    if (config_.qs_plies < 0) throw std::invalid_argument("latent search qs_plies must be >= 0");
    if (config_.revise_factor < 1 || !(config_.revise_margin >= 0.0))
        throw std::invalid_argument("latent search revise_factor must be >= 1 and revise_margin >= 0");
}

void LatentSearch::do_move(Move move) {
    if (evaluator_)
        evaluator_->on_do_move(*position_, move);
    else
        encoder_.on_do_move(*position_, move);
    position_->do_move(move);
}

void LatentSearch::undo_move() {
    position_->undo_move();
    if (evaluator_)
        evaluator_->on_undo_move();
    else
        encoder_.on_undo_move();
}

void LatentSearch::reset_scorer() {
    if (evaluator_)
        evaluator_->reset(*position_);
    else
        encoder_.reset(*position_);
}

void LatentSearch::check_abort() {
    if (!abortable_) return;
    if (limits_->max_nodes >= 0 && nodes_before_ + nodes_ + 1 > limits_->max_nodes) throw Aborted{};
    if ((nodes_ & 255) != 0) return;
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) throw Aborted{};
    if (abort_at_s_ >= 0) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        if (elapsed >= abort_at_s_) throw Aborted{};
    }
    if (poll_ != nullptr && *poll_ && (*poll_)()) throw Aborted{};
}

double LatentSearch::score_current() {
    check_abort();
    ++nodes_;
    if (evaluator_) return wdl_.white_score(*position_, evaluator_->evaluate(*position_));
    return encoder_.score(*position_);
}

bool LatentSearch::is_history_draw(int clock, std::uint64_t key) const {
    if (clock >= 100) return true;
    if (clock < 4) return false;  // a repetition needs at least four reversible plies
    const auto found = history_.find(key);
    int count = found == history_.end() ? 0 : found->second;
    count += static_cast<int>(std::count(path_.begin(), path_.end(), key));
    return count >= 2;
}

LatentSearch::Child LatentSearch::value_child(Move move, int ply, bool parent_white, bool resolve, double alpha,
                                              double beta) {
    Child child;
    child.move = move;
    do_move(move);
    const Position& position = *position_;
    child.key = position.key();
    MoveList replies;
    generate_legal_moves(position, replies);
    const bool no_heavy = (position.pieces(Pawn) | position.pieces(Rook) | position.pieces(Queen)) == 0;
    if (replies.size == 0 && position.in_check()) {
        const double mate = kLatentMateValue - (ply + 1);
        child.value = parent_white ? mate : -mate;
        child.terminal = true;
    } else if (replies.size == 0 || (no_heavy && position.is_insufficient_material()) ||
               is_history_draw(position.halfmove_clock(), child.key)) {
        child.value = config_.draw_score;
        child.terminal = true;
    } else {
        child.value = resolve ? quiescence(ply + 1, 0, alpha, beta) : score_current();
    }
    undo_move();
    return child;
}

double LatentSearch::quiescence(int ply, int qply, double alpha, double beta) {
    const Position& position = *position_;
    const bool white = position.side_to_move() == White;
    const bool in_check = position.in_check();
    MoveList moves;
    generate_legal_moves(position, moves);
    if (moves.size == 0) {
        if (!in_check) return config_.draw_score;
        const double mate = kLatentMateValue - ply;
        return white ? -mate : mate;
    }
    double best = white ? -kInfinity : kInfinity;
    if (!in_check || qply >= config_.qs_plies) {
        best = score_current();  // stand pat
        if (qply >= config_.qs_plies) return best;
        if (white) {
            if (best >= beta) return best;
            alpha = std::max(alpha, best);
        } else {
            if (best <= alpha) return best;
            beta = std::min(beta, best);
        }
    }
    std::vector<std::pair<int, Move>> order;
    for (const Move move : moves) {
        if (!in_check) {
            if (!is_capture(position, move) && move.promotion() != Queen) continue;
            if (!see_at_least(position, move, 0)) continue;  // loses material: pruned
        }
        order.emplace_back(refutation_key(position, move), move);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [key, move] : order) {
        do_move(move);
        const double value = insufficient(*position_) ? config_.draw_score
                                                      : quiescence(ply + 1, qply + 1, alpha, beta);
        undo_move();
        if (white ? value > best : value < best) best = value;
        if (white) alpha = std::max(alpha, value);
        else beta = std::min(beta, value);
        if (alpha >= beta) break;
    }
    return best;
}

std::vector<std::size_t> LatentSearch::expanded(const std::vector<Child>& children, int ply) const {
    const std::size_t width = std::min(children.size(), static_cast<std::size_t>(width_at(ply)));
    std::vector<std::size_t> indices(width);
    std::iota(indices.begin(), indices.end(), std::size_t{0});
    if (config_.qs) {
        for (std::size_t index = width; index < children.size(); ++index)
            if (wins_material(*position_, children[index].move)) indices.push_back(index);
    }
    return indices;
}

std::vector<LatentSearch::Child> LatentSearch::children_of(int ply) {
    MoveList moves;
    python_chess_move_order(*position_, moves);
    const bool white = position_->side_to_move() == White;
    std::vector<Child> children;
    children.reserve(static_cast<std::size_t>(moves.size));
    for (const Move move : moves) children.push_back(value_child(move, ply, white));
    return children;
}

namespace {
template <typename Item>
void sort_by_value(std::vector<Item>& items, bool descending) {
    std::stable_sort(items.begin(), items.end(), [descending](const Item& a, const Item& b) {
        return descending ? a.value > b.value : a.value < b.value;
    });
}
}  // namespace

double LatentSearch::leaf_parent(int ply, double alpha, double beta, std::vector<Move>& pv) {
    MoveList moves;
    python_chess_move_order(*position_, moves);
    const bool white = position_->side_to_move() == White;
    std::vector<int> order(static_cast<std::size_t>(moves.size));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return refutation_key(*position_, moves[a]) < refutation_key(*position_, moves[b]);
    });
    double best = white ? -kInfinity : kInfinity;
    int best_index = moves.size;
    for (const int index : order) {
        double value;
        if (config_.qs) {
            const double low = white && best > alpha ? best : alpha;
            const double high = !white && best < beta ? best : beta;
            value = value_child(moves[index], ply, white, true, config_.alpha_beta ? low : -kInfinity,
                                config_.alpha_beta ? high : kInfinity)
                        .value;
        } else {
            value = value_child(moves[index], ply, white).value;
        }
        // Ties go to the earliest move in generation order, as in the full sort.
        if ((white ? value > best : value < best) || (value == best && index < best_index)) {
            best = value;
            best_index = index;
        }
        if (config_.alpha_beta && (white ? best >= beta : best <= alpha)) break;
    }
    pv.assign(1, moves[best_index]);
    return best;
}

double LatentSearch::minimax(int ply, int depth, double alpha, double beta, std::vector<Move>& pv) {
    if (depth == 1 && (config_.qs || (config_.leaf_cutoffs && config_.alpha_beta)))
        return leaf_parent(ply, alpha, beta, pv);
    std::vector<Child> children = children_of(ply);
    const bool white = position_->side_to_move() == White;
    sort_by_value(children, white);
    if (children.size() > static_cast<std::size_t>(width_at(ply))) {
        const std::vector<std::size_t> keep = expanded(children, ply);
        std::vector<Child> kept;
        kept.reserve(keep.size());
        for (const std::size_t index : keep) kept.push_back(children[index]);
        children = std::move(kept);
    }
    if (depth == 1) {
        pv.assign(1, children.front().move);
        return children.front().value;
    }
    const std::uint64_t key = position_->key();
    if (config_.alpha_beta) {
        const auto hint = hints_.find(key);
        if (hint != hints_.end() && hint->second != children.front().move) {
            for (std::size_t index = 0; index < children.size(); ++index) {
                if (children[index].move == hint->second) {
                    std::rotate(children.begin(), children.begin() + static_cast<long>(index),
                                children.begin() + static_cast<long>(index) + 1);
                    break;
                }
            }
        }
    }
    double best = white ? -kInfinity : kInfinity;
    const double window = white ? alpha : beta;
    std::vector<Move> line;
    for (std::size_t n = 0; n < children.size(); ++n) {
        const Child& child = children[n];
        double value;
        line.clear();
        if (child.terminal) {
            value = child.value;
        } else {
            // reduce: a quiet move after the first two is searched a ply shallower first, and
            // again at full depth only if that shallower value would be the new best.
            const bool quiet = !is_capture(*position_, child.move) && child.move.promotion() == NoPieceType;
            do_move(child.move);
            path_.push_back(child.key);
            const bool reduced = config_.reduce && quiet && depth >= 3 && n >= 2 && !position_->in_check();
            value = minimax(ply + 1, depth - (reduced ? 2 : 1), alpha, beta, line);
            if (reduced && (white ? value > best && value > alpha : value < best && value < beta)) {
                line.clear();
                value = minimax(ply + 1, depth - 1, alpha, beta, line);
            }
            path_.pop_back();
            undo_move();
        }
        if (white ? value > best : value < best) {
            best = value;
            pv.assign(1, child.move);
            pv.insert(pv.end(), line.begin(), line.end());
        }
        if (config_.alpha_beta) {
            if (white) alpha = std::max(alpha, value);
            else beta = std::min(beta, value);
            if (alpha >= beta) break;
        }
    }
    if (config_.alpha_beta && (white ? best > window : best < window)) {
        if (hints_.size() >= kMaxHints) hints_.clear();
        hints_[key] = pv.front();
    }
    return best;
}

void LatentSearch::run_iteration(int depth, bool exact_root, LatentSearchResult& result, Move first) {
    result = LatentSearchResult();
    std::vector<Child> children = children_of(0);
    const bool white = position_->side_to_move() == White;
    sort_by_value(children, white);
    if (config_.beam) {
        result = beam(children, depth);
        return;
    }
    std::vector<std::size_t> expand = expanded(children, 0);
    for (std::size_t n = 1; n < expand.size() && !first.is_none(); ++n) {
        if (children[expand[n]].move == first) {
            std::rotate(expand.begin(), expand.begin() + static_cast<long>(n),
                        expand.begin() + static_cast<long>(n) + 1);
            break;
        }
    }
    result.depth = depth;
    for (const Child& child : children) result.root_moves.push_back({child.move, child.value, std::nullopt, false});
    double best = white ? -kInfinity : kInfinity;
    std::vector<Move> line;
    for (std::size_t n = 0; n < expand.size(); ++n) {
        const std::size_t index = expand[n];
        const Child& child = children[index];
        double value;
        line.clear();
        if (child.terminal || (depth == 1 && !config_.qs)) {
            value = child.value;
        } else {
            double alpha = -kInfinity, beta = kInfinity;
            if (config_.alpha_beta && n > 0 && !exact_root) {
                if (white) alpha = best;
                else beta = best;
            }
            do_move(child.move);
            path_.assign(1, child.key);
            value = depth == 1 ? quiescence(1, 0, alpha, beta) : minimax(1, depth - 1, alpha, beta, line);
            path_.clear();
            undo_move();
        }
        const bool improved = white ? value > best : value < best;
        LatentRootMove& root_move = result.root_moves[index];
        root_move.value = value;
        root_move.exact = improved || exact_root || n == 0 || !config_.alpha_beta || child.terminal ||
                          (depth == 1 && !config_.qs);
        if (improved) {
            best = value;
            result.pv.assign(1, child.move);
            result.pv.insert(result.pv.end(), line.begin(), line.end());
            result.move = child.move;
            result.value = best;
        }
        ++result.root_searched;
    }
}

LatentSearchResult LatentSearch::beam(const std::vector<Child>& children, int depth) {
    const auto width = static_cast<std::size_t>(config_.width);
    const bool root_white = position_->side_to_move() == White;
    std::vector<Line> finished, lines;
    for (std::size_t index = 0; index < std::min(width, children.size()); ++index) {
        const Child& child = children[index];
        Line line{{child.move}, {child.key}, child.value, child.terminal, static_cast<int>(index)};
        (child.terminal ? finished : lines).push_back(std::move(line));
    }
    for (int level = 2; level <= depth && !lines.empty(); ++level) {
        std::vector<Line> candidates;
        for (const Line& line : lines) {
            for (const Move move : line.moves) do_move(move);
            path_ = line.path;
            const std::vector<Child> family = children_of(level - 1);
            for (std::size_t back = 0; back < line.moves.size(); ++back) undo_move();
            for (const Child& child : family) {
                Line next{line.moves, line.path, child.value, child.terminal, line.root_index};
                next.moves.push_back(child.move);
                next.path.push_back(child.key);
                candidates.push_back(std::move(next));
            }
        }
        path_.clear();
        const bool mover_white = (level % 2 == 1) == root_white;
        sort_by_value(candidates, mover_white);
        if (candidates.size() > width) candidates.resize(width);
        lines.clear();
        for (Line& line : candidates) (line.terminal ? finished : lines).push_back(std::move(line));
    }
    std::vector<Line> final_lines = std::move(finished);
    for (Line& line : lines) final_lines.push_back(std::move(line));
    sort_by_value(final_lines, root_white);
    LatentSearchResult result;
    result.beam = true;
    result.move = final_lines.front().moves.front();
    result.value = final_lines.front().value;
    result.pv = final_lines.front().moves;
    result.depth = depth;
    std::vector<std::optional<double>> reached(children.size());
    for (const Line& line : final_lines) {
        auto& slot = reached[static_cast<std::size_t>(line.root_index)];
        if (!slot) slot = line.value;
    }
    for (std::size_t index = 0; index < children.size(); ++index) {
        const bool seen = reached[index].has_value();
        result.root_moves.push_back({children[index].move, children[index].value, reached[index], seen});
    }
    return result;
}

LatentSearchResult LatentSearch::search(const Position& root, const std::vector<std::uint64_t>& history_keys,
                                        const LatentSearchLimits& limits,
                                        const LatentIterationCallback& on_iteration,
                                        const LatentStopPoll& poll, const std::atomic<bool>* stop) {
    if (limits.depth < 1 || limits.depth > kLatentMaxDepth)
        throw std::invalid_argument("latent search depth must lie in [1, " + std::to_string(kLatentMaxDepth) +
                                    "], got " + std::to_string(limits.depth));
    started_ = std::chrono::steady_clock::now();
    const auto elapsed = [&]() {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    };
    LatentSearchResult best;
    best.beam = config_.beam;
    MoveList legal;
    generate_legal_moves(root, legal);
    if (legal.size == 0) {
        best.value = config_.draw_score;
        if (root.in_check()) best.value = root.side_to_move() == White ? -kLatentMateValue : kLatentMateValue;
        best.time_s = elapsed();
        return best;
    }
    history_.clear();
    for (const std::uint64_t key : history_keys) ++history_[key];
    if (history_keys.empty()) history_[root.key()] = 1;
    limits_ = &limits;
    poll_ = &poll;
    stop_ = stop;
    nodes_before_ = 0;
    bool have_best = false;
    int revisions = 0;
    wide_width_ = 0;
    double last_time = 0.0;
    long long last_nodes = 0, previous_nodes = 0;
    const bool partial = config_.partial && !config_.beam;
    for (int depth = limits.iterate ? 1 : limits.depth; depth <= limits.depth; ++depth) {
        abort_at_s_ = limits.deadline_s;
        if (have_best) {
            const double now = elapsed();
            if (limits.soft_deadline_s >= 0 && now >= limits.soft_deadline_s) break;
            const double growth =
                previous_nodes > 0
                    ? std::clamp(static_cast<double>(last_nodes) / static_cast<double>(previous_nodes), 1.5, 8.0)
                    : 3.0;
            if (limits.deadline_s >= 0 && now + last_time * growth > limits.deadline_s) {
                if (!partial) break;
                // Not predicted to finish in time: searched anyway, up to the soft deadline.
                if (limits.soft_deadline_s >= 0) abort_at_s_ = std::min(limits.soft_deadline_s, limits.deadline_s);
            }
        }
        position_.emplace(root);
        reset_scorer();
        path_.clear();
        abortable_ = have_best;
        nodes_ = 0;
        const double began = elapsed();
        LatentSearchResult result;
        bool aborted = false;
        try {
            run_iteration(depth, limits.exact_root, result, partial && have_best ? best.move : Move());
        } catch (const Aborted&) {
            aborted = true;
        }
        nodes_before_ += nodes_;
        if (aborted) {
            // Kept when the last iteration's best move (searched first) finished at this depth.
            if (partial && result.root_searched > 0) {
                result.partial = true;
                result.revisions = revisions;
                best = std::move(result);
                best.nodes = nodes_before_;
                best.time_s = elapsed();
                if (on_iteration) on_iteration(best);
            }
            break;
        }
        long long iteration_nodes = nodes_;
        if (config_.revise && !config_.beam && have_best && !is_mate_value(best.value) &&
            !is_mate_value(result.value)) {
            const bool white = root.side_to_move() == White;
            const double drop = white ? best.value - result.value : result.value - best.value;
            if (drop > config_.revise_margin) {
                position_.emplace(root);
                reset_scorer();
                path_.clear();
                nodes_ = 0;
                wide_width_ = config_.width * config_.revise_factor;
                LatentSearchResult wide;
                try {
                    run_iteration(depth, limits.exact_root, wide);
                    wide.revisions = result.revisions + 1;
                    result = std::move(wide);
                } catch (const Aborted&) {
                    aborted = true;
                }
                wide_width_ = 0;
                nodes_before_ += nodes_;
                iteration_nodes += nodes_;
                ++revisions;
            }
        }
        previous_nodes = last_nodes;
        last_nodes = iteration_nodes;
        last_time = elapsed() - began;
        best = std::move(result);
        have_best = true;
        best.revisions = revisions;
        best.nodes = nodes_before_;
        best.time_s = elapsed();
        if (on_iteration) on_iteration(best);
        if (!config_.beam && is_mate_value(best.value)) break;
        if (aborted) break;  // the wider re-search was stopped: the narrow result stands
    }
    best.nodes = nodes_before_;
    best.revisions = revisions;
    best.time_s = elapsed();
    best.completed = (best.depth == limits.depth && !best.partial) || is_mate_value(best.value);
    position_.reset();
    limits_ = nullptr;
    poll_ = nullptr;
    stop_ = nullptr;
    return best;
}

}  // namespace latentchess::core
