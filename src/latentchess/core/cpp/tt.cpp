// Transposition table storage and replacement (see tt.h for the contract).
//
// Invariants:
// - Replacement within a bucket: the same position's entry if present, else the entry with the
//   lowest (depth - 8 * age) where age counts searches since it was written.
// - An entry for the same position is overwritten unless it is deeper and the new result is not
//   exact; its move is kept when the new result has none.
// - Concurrency (Lazy SMP): an entry is read as data word then check word and written as data
//   word then check word, all relaxed; a store decides on a snapshot of its bucket, so two
//   threads storing into one bucket at once may overwrite each other's choice (a lost entry, never
//   a wrong one: a mixed pair fails the XOR check).
#include "tt.h"

#include <algorithm>

#include "search_constants.h"

namespace latentchess::core {

std::uint64_t TableEntry::data() const {
  return static_cast<std::uint64_t>(move) |
         static_cast<std::uint64_t>(static_cast<std::uint16_t>(score)) << 16 |
         static_cast<std::uint64_t>(static_cast<std::uint16_t>(static_eval)) << 32 |
         static_cast<std::uint64_t>(static_cast<std::uint8_t>(depth)) << 48 |
         static_cast<std::uint64_t>(generation_and_bound) << 56;
}

TableEntry TableEntry::unpack(std::uint32_t key, std::uint64_t data) {
  TableEntry entry;
  entry.key = key;
  entry.move = static_cast<std::uint16_t>(data);
  entry.score = static_cast<std::int16_t>(static_cast<std::uint16_t>(data >> 16));
  entry.static_eval = static_cast<std::int16_t>(static_cast<std::uint16_t>(data >> 32));
  entry.depth = static_cast<std::int8_t>(static_cast<std::uint8_t>(data >> 48));
  entry.generation_and_bound = static_cast<std::uint8_t>(data >> 56);
  return entry;
}

TableEntry TranspositionTable::load(const Bucket& bucket, int i) {
  const std::uint64_t data = bucket.data[i].load(std::memory_order_relaxed);
  const std::uint32_t check = bucket.checks[i].load(std::memory_order_relaxed);
  return TableEntry::unpack(check ^ fold(data), data);
}

void TranspositionTable::save(Bucket& bucket, int i, const TableEntry& entry) {
  const std::uint64_t data = entry.data();
  bucket.data[i].store(data, std::memory_order_relaxed);
  bucket.checks[i].store(entry.key ^ fold(data), std::memory_order_relaxed);
}

TranspositionTable::TranspositionTable(std::size_t megabytes) { resize(megabytes); }

void TranspositionTable::resize(std::size_t megabytes) {
  megabytes = std::max<std::size_t>(1, megabytes);
  const std::size_t count =
      std::max<std::size_t>(1, megabytes * 1024 * 1024 / sizeof(Bucket));
  buckets_.reset();  // the old table goes before the new one is allocated
  buckets_ = std::make_unique<Bucket[]>(count);
  bucket_count_ = count;
  megabytes_ = megabytes;
  clear();
}

void TranspositionTable::clear() {
  for (std::size_t b = 0; b < bucket_count_; ++b) {
    for (int i = 0; i < kBucketSize; ++i) {
      buckets_[b].data[i].store(0, std::memory_order_relaxed);
      buckets_[b].checks[i].store(0, std::memory_order_relaxed);
    }
  }
  generation_ = 0;
}

ProbeResult TranspositionTable::probe(std::uint64_t key) const {
  const Bucket& bucket = buckets_[bucket_index(key)];
  const auto check = static_cast<std::uint32_t>(key);
  for (int i = 0; i < kBucketSize; ++i) {
    const TableEntry entry = load(bucket, i);
    if (entry.key == check && entry.bound() != Bound::None) {
      ProbeResult result;
      result.hit = true;
      result.move = Move::from_bits(entry.move);
      result.score = entry.score;
      result.static_eval = entry.static_eval;
      result.depth = entry.depth;
      result.bound = entry.bound();
      result.was_pv = entry.was_pv();
      return result;
    }
  }
  return {};
}

void TranspositionTable::store(std::uint64_t key, Move move, int score, int static_eval,
                               int depth, Bound bound, bool was_pv) {
  Bucket& bucket = buckets_[bucket_index(key)];
  const auto check = static_cast<std::uint32_t>(key);
  // One snapshot of the bucket: another thread may change it meanwhile (the last write wins).
  TableEntry entries[kBucketSize];
  for (int i = 0; i < kBucketSize; ++i) entries[i] = load(bucket, i);
  int target_index = 0;
  int worst = 1 << 30;
  for (int i = 0; i < kBucketSize; ++i) {
    const TableEntry& entry = entries[i];
    if (entry.key == check && entry.bound() != Bound::None) {
      target_index = i;
      break;
    }
    const int age = (generation_ - entry.generation() + kGenerations) % kGenerations;
    const int worth = entry.bound() == Bound::None ? -(1 << 20) : entry.depth - 8 * age;
    if (worth < worst) {
      worst = worth;
      target_index = i;
    }
  }
  TableEntry target = entries[target_index];
  const bool same = target.key == check && target.bound() != Bound::None;
  if (same && bound != Bound::Exact && target.depth > depth + 2 &&
      target.generation() == generation_) {
    return;
  }
  if (!same || move != Move::none()) target.move = move.bits();
  target.key = check;
  target.score = static_cast<std::int16_t>(score);
  target.static_eval = static_cast<std::int16_t>(static_eval);
  target.depth = static_cast<std::int8_t>(std::clamp(depth, -1, 127));
  target.generation_and_bound = static_cast<std::uint8_t>(
      (generation_ << 3) | (was_pv ? 4 : 0) | static_cast<std::uint8_t>(bound));
  save(bucket, target_index, target);
}

int TranspositionTable::hashfull() const {
  const std::size_t sample = std::min<std::size_t>(bucket_count_, 250);
  int used = 0;
  for (std::size_t b = 0; b < sample; ++b) {
    for (int i = 0; i < kBucketSize; ++i) {
      const TableEntry entry = load(buckets_[b], i);
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
