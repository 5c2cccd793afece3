// The SOLIS latent search in the native core; see latent_search.h.
#include "latent_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "movegen.h"

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

}  // namespace

void python_chess_move_order(const Position& position, MoveList& moves) {
    generate_legal_moves(position, moves);
    const bool in_check = position.in_check();
    std::sort(moves.begin(), moves.end(), [&](Move a, Move b) {
        return python_chess_key(position, a, in_check) < python_chess_key(position, b, in_check);
    });
}

LatentSearch::LatentSearch(std::shared_ptr<const LatentNetwork> network, LatentSearchConfig config)
    : network_(std::move(network)), config_(config), encoder_(network_) {
    if (config_.width < 1) throw std::invalid_argument("latent search width must be at least 1");
    if (!(config_.draw_score >= -1.0 && config_.draw_score <= 1.0))
        throw std::invalid_argument("latent search draw_score must lie in [-1, 1]");
}

void LatentSearch::do_move(Move move) {
    encoder_.on_do_move(*position_, move);
    position_->do_move(move);
}

void LatentSearch::undo_move() {
    position_->undo_move();
    encoder_.on_undo_move();
}

void LatentSearch::check_abort() {
    if (!abortable_) return;
    if (limits_->max_nodes >= 0 && nodes_before_ + nodes_ + 1 > limits_->max_nodes) throw Aborted{};
    if ((nodes_ & 255) != 0) return;
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) throw Aborted{};
    if (limits_->deadline_s >= 0) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        if (elapsed >= limits_->deadline_s) throw Aborted{};
    }
    if (poll_ != nullptr && *poll_ && (*poll_)()) throw Aborted{};
}

double LatentSearch::score_current() {
    check_abort();
    ++nodes_;
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

LatentSearch::Child LatentSearch::value_child(Move move, int ply, bool parent_white) {
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
        child.value = score_current();
    }
    undo_move();
    return child;
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
        const double value = value_child(moves[index], ply, white).value;
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
    if (depth == 1 && config_.leaf_cutoffs && config_.alpha_beta) return leaf_parent(ply, alpha, beta, pv);
    std::vector<Child> children = children_of(ply);
    const bool white = position_->side_to_move() == White;
    sort_by_value(children, white);
    if (children.size() > static_cast<std::size_t>(config_.width))
        children.resize(static_cast<std::size_t>(config_.width));
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
    for (const Child& child : children) {
        double value;
        line.clear();
        if (child.terminal) {
            value = child.value;
        } else {
            do_move(child.move);
            path_.push_back(child.key);
            value = minimax(ply + 1, depth - 1, alpha, beta, line);
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

LatentSearchResult LatentSearch::run_iteration(int depth, bool exact_root) {
    std::vector<Child> children = children_of(0);
    const bool white = position_->side_to_move() == White;
    sort_by_value(children, white);
    if (config_.beam) return beam(children, depth);
    const std::size_t top = std::min(children.size(), static_cast<std::size_t>(config_.width));
    std::vector<std::optional<double>> values(children.size());
    std::vector<bool> exact(children.size(), false);
    double best = white ? -kInfinity : kInfinity;
    LatentSearchResult result;
    std::vector<Move> line;
    for (std::size_t index = 0; index < top; ++index) {
        const Child& child = children[index];
        double value;
        line.clear();
        if (child.terminal || depth == 1) {
            value = child.value;
        } else {
            double alpha = -kInfinity, beta = kInfinity;
            if (config_.alpha_beta && index > 0 && !exact_root) {
                if (white) alpha = best;
                else beta = best;
            }
            do_move(child.move);
            path_.assign(1, child.key);
            value = minimax(1, depth - 1, alpha, beta, line);
            path_.clear();
            undo_move();
        }
        const bool improved = white ? value > best : value < best;
        values[index] = value;
        exact[index] = improved || exact_root || index == 0 || !config_.alpha_beta || child.terminal ||
                       depth == 1;
        if (improved) {
            best = value;
            result.pv.assign(1, child.move);
            result.pv.insert(result.pv.end(), line.begin(), line.end());
        }
    }
    result.move = result.pv.front();
    result.value = best;
    result.depth = depth;
    for (std::size_t index = 0; index < children.size(); ++index) {
        result.root_moves.push_back(
            {children[index].move, children[index].value, values[index], exact[index]});
    }
    return result;
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
    double last_time = 0.0;
    long long last_nodes = 0, previous_nodes = 0;
    for (int depth = limits.iterate ? 1 : limits.depth; depth <= limits.depth; ++depth) {
        if (have_best) {
            const double now = elapsed();
            if (limits.soft_deadline_s >= 0 && now >= limits.soft_deadline_s) break;
            const double growth =
                previous_nodes > 0
                    ? std::clamp(static_cast<double>(last_nodes) / static_cast<double>(previous_nodes), 1.5, 8.0)
                    : 3.0;
            if (limits.deadline_s >= 0 && now + last_time * growth > limits.deadline_s) break;
        }
        position_.emplace(root);
        encoder_.reset(*position_);
        path_.clear();
        abortable_ = have_best;
        nodes_ = 0;
        const double began = elapsed();
        LatentSearchResult result;
        bool aborted = false;
        try {
            result = run_iteration(depth, limits.exact_root);
        } catch (const Aborted&) {
            aborted = true;
        }
        nodes_before_ += nodes_;
        if (aborted) break;
        previous_nodes = last_nodes;
        last_nodes = nodes_;
        last_time = elapsed() - began;
        best = std::move(result);
        have_best = true;
        best.nodes = nodes_before_;
        best.time_s = elapsed();
        if (on_iteration) on_iteration(best);
        if (!config_.beam && is_mate_value(best.value)) break;
    }
    best.nodes = nodes_before_;
    best.time_s = elapsed();
    best.completed = best.depth == limits.depth || is_mate_value(best.value);
    position_.reset();
    limits_ = nullptr;
    poll_ = nullptr;
    stop_ = nullptr;
    return best;
}

}  // namespace latentchess::core
