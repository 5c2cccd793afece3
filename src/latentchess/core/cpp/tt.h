// The transposition table: a fixed-size hash of search results, sized in megabytes.
//
// Invariants:
// - Buckets of kBucketSize entries (a 32-bit check word and a 64-bit data word each) padded to
//   one 64-byte cache line (one miss per probe; the search prefetches a child's bucket as soon as
//   its key is known); a position's bucket is chosen by the high bits of (key * bucket count) and
//   it is recognised by the key's low 32 bits, so distinct positions can collide: every move read
//   back must be checked (is_pseudo_legal + is_legal) before use.
// - Scores are stored "mate relative to this node" (see score_to_table/score_from_table) so a
//   mate found at one ply is correct when read at another.
// - `generation` advances once per search; entries from older searches are replaced first.
// - Shared by all threads of a search (Lazy SMP) without locks: both words of an entry are
//   relaxed atomics (plain loads and stores on x86-64, no data race in the C++ sense), and the
//   check word is stored XORed with the data word folded to 32 bits ("lockless hashing"), so an
//   entry torn by two threads writing at once (one's check word, the other's data) fails the key
//   check like any other position's entry, except with the ordinary 2^-32 collision odds.
//   Single-threaded the XOR changes nothing: a probe hits exactly the entries it hit before.
//   new_search(), resize() and clear() must not run during a search (generation_ is read by
//   every thread, written only between searches).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "types.h"

namespace latentchess::core {

enum class Bound : std::uint8_t { None = 0, Upper = 1, Lower = 2, Exact = 3 };

struct TableEntry {
  std::uint32_t key = 0;
  std::uint16_t move = 0;
  std::int16_t score = 0;
  std::int16_t static_eval = 0;
  std::int8_t depth = 0;
  std::uint8_t generation_and_bound = 0;  // generation << 3 | was_pv << 2 | bound

  Bound bound() const { return static_cast<Bound>(generation_and_bound & 3); }
  bool was_pv() const { return (generation_and_bound >> 2) & 1; }
  std::uint8_t generation() const { return generation_and_bound >> 3; }

  // Everything but the key in one word: move, score, static_eval, depth, generation_and_bound.
  std::uint64_t data() const;
  // The entry with this key and the fields of `data`.
  static TableEntry unpack(std::uint32_t key, std::uint64_t data);
};

struct ProbeResult {
  bool hit = false;
  Move move = Move::none();
  int score = 0;
  int static_eval = 0;
  int depth = 0;
  Bound bound = Bound::None;
  bool was_pv = false;  // stored from a PV node, or from a node whose entry said so
};

class TranspositionTable {
 public:
  static constexpr int kBucketSize = 5;
  static constexpr int kGenerations = 32;  // 5 bits of an entry; ages count modulo this

  explicit TranspositionTable(std::size_t megabytes = 16);

  void resize(std::size_t megabytes);
  void clear();
  void new_search() { generation_ = (generation_ + 1) % kGenerations; }

  ProbeResult probe(std::uint64_t key) const;
  // Start loading key's bucket into the cache (a hint; no effect on results).
  void prefetch(std::uint64_t key) const { __builtin_prefetch(&buckets_[bucket_index(key)]); }
  // Thread-safe against concurrent probes and stores (see the invariants above).
  void store(std::uint64_t key, Move move, int score, int static_eval, int depth, Bound bound,
             bool was_pv = false);

  // Permille of a sample of entries written in the current search (UCI "hashfull").
  int hashfull() const;
  std::size_t megabytes() const { return megabytes_; }

 private:
  // checks[i] holds (key's low 32 bits) ^ fold(data[i]); an empty entry is all zero.
  struct alignas(64) Bucket {
    std::atomic<std::uint32_t> checks[kBucketSize];
    std::atomic<std::uint64_t> data[kBucketSize];
  };
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");

  static std::uint32_t fold(std::uint64_t data) {
    return static_cast<std::uint32_t>(data) ^ static_cast<std::uint32_t>(data >> 32);
  }
  // Entry i of a bucket as one consistent-looking TableEntry (its key decoded with its data).
  static TableEntry load(const Bucket& bucket, int i);
  static void save(Bucket& bucket, int i, const TableEntry& entry);

  std::size_t bucket_index(std::uint64_t key) const {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(key) * bucket_count_) >> 64);
  }

  std::unique_ptr<Bucket[]> buckets_;
  std::size_t bucket_count_ = 0;
  std::size_t megabytes_ = 0;
  std::uint8_t generation_ = 0;
};

// Mate scores are stored as distance from this node, and read back as distance from the root.
int score_to_table(int score, int ply);
int score_from_table(int score, int ply);

}  // namespace latentchess::core
