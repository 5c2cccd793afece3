// Transposition table storage and replacement (see tt.h for the contract).
//
// Invariants:
// - Replacement within a bucket: the same position's entry if present, else the entry with the
//   lowest (depth - 8 * age) where age counts searches since it was written.
// - An entry for the same position is overwritten unless it is deeper and the new result is not
//   exact; its move is kept when the new result has none.
#include "tt.h"

#include <algorithm>

#include "search_constants.h"

namespace latentchess::core {

TranspositionTable::TranspositionTable(std::size_t megabytes) { resize(megabytes); }

void TranspositionTable::resize(std::size_t megabytes) {
  megabytes = std::max<std::size_t>(1, megabytes);
  const std::size_t count = megabytes * 1024 * 1024 / sizeof(Bucket);
  buckets_.assign(std::max<std::size_t>(1, count), Bucket{});
  buckets_.shrink_to_fit();
  megabytes_ = megabytes;
  generation_ = 0;
}

void TranspositionTable::clear() {
  std::fill(buckets_.begin(), buckets_.end(), Bucket{});
  generation_ = 0;
}

ProbeResult TranspositionTable::probe(std::uint64_t key) const {
  const Bucket& bucket = buckets_[bucket_index(key)];
  const auto check = static_cast<std::uint32_t>(key);
  for (const TableEntry& entry : bucket.entries) {
    if (entry.key == check && entry.bound() != Bound::None) {
      ProbeResult result;
      result.hit = true;
      result.move = Move::from_bits(entry.move);
      result.score = entry.score;
      result.static_eval = entry.static_eval;
      result.depth = entry.depth;
      result.bound = entry.bound();
      return result;
    }
  }
  return {};
}

void TranspositionTable::store(std::uint64_t key, Move move, int score, int static_eval,
                               int depth, Bound bound) {
  Bucket& bucket = buckets_[bucket_index(key)];
  const auto check = static_cast<std::uint32_t>(key);
  TableEntry* target = &bucket.entries[0];
  int worst = 1 << 30;
  for (TableEntry& entry : bucket.entries) {
    if (entry.key == check && entry.bound() != Bound::None) {
      target = &entry;
      break;
    }
    const int age = (generation_ - entry.generation()) & 63;
    const int worth = entry.bound() == Bound::None ? -(1 << 20) : entry.depth - 8 * age;
    if (worth < worst) {
      worst = worth;
      target = &entry;
    }
  }
  const bool same = target->key == check && target->bound() != Bound::None;
  if (same && bound != Bound::Exact && target->depth > depth + 2 &&
      target->generation() == generation_) {
    return;
  }
  if (!same || move != Move::none()) target->move = move.bits();
  target->key = check;
  target->score = static_cast<std::int16_t>(score);
  target->static_eval = static_cast<std::int16_t>(static_eval);
  target->depth = static_cast<std::int8_t>(std::clamp(depth, -1, 127));
  target->generation_and_bound =
      static_cast<std::uint8_t>((generation_ << 2) | static_cast<std::uint8_t>(bound));
}

int TranspositionTable::hashfull() const {
  const std::size_t sample = std::min<std::size_t>(buckets_.size(), 250);
  int used = 0;
  for (std::size_t i = 0; i < sample; ++i) {
    for (const TableEntry& entry : buckets_[i].entries) {
      used += entry.bound() != Bound::None && entry.generation() == generation_;
    }
  }
  return static_cast<int>(used * 1000 / (sample * kBucketSize));
}

int score_to_table(int score, int ply) {
  if (score >= kMateInMaxPly) return score + ply;
  if (score <= -kMateInMaxPly) return score - ply;
  return score;
}

int score_from_table(int score, int ply) {
  if (score >= kMateInMaxPly) return score - ply;
  if (score <= -kMateInMaxPly) return score + ply;
  return score;
}

}  // namespace latentchess::core
