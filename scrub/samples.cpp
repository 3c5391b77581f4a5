#include "samples.h"

#include <algorithm>
#include <random>

namespace vgpu::scrub {

std::vector<Sample> choose_samples(std::span<const std::size_t> chunk_bytes, std::size_t random_count,
                                   std::uint64_t seed) {
  std::vector<Sample> out;
  std::vector<std::size_t> words_before;  // prefix sums of whole words, to map a global word index
  std::size_t total_words = 0;
  for (std::size_t i = 0; i < chunk_bytes.size(); ++i) {
    words_before.push_back(total_words);
    const std::size_t words = chunk_bytes[i] / kWordBytes;
    if (words == 0) continue;
    out.push_back({i, 0});
    if (words > 1) out.push_back({i, (words - 1) * kWordBytes});
    total_words += words;
  }
  if (total_words == 0) return out;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, total_words - 1);
  for (std::size_t n = 0; n < random_count; ++n) {
    const std::size_t word = pick(rng);
    // Last chunk whose first word is <= word; empty chunks share a prefix with the next one, so
    // upper_bound lands past them.
    const auto it = std::upper_bound(words_before.begin(), words_before.end(), word);
    const auto chunk = static_cast<std::size_t>(it - words_before.begin()) - 1;
    out.push_back({chunk, (word - words_before[chunk]) * kWordBytes});
  }
  return out;
}

}  // namespace vgpu::scrub
