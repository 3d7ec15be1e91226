// Base64 decoding sixteen characters at a time with SSSE3's byte shuffle, after Wojciech Muła
// and Daniel Lemire, "Faster Base64 Encoding and Decoding Using AVX2 Instructions" (ACM TOPS,
// 2018): each character's two nibbles look up, in two 16-entry tables, which classes of
// character it could and could not be; one `pshufb` more finds the offset that turns it into
// its six bits; two multiply-adds pack four sixes into three bytes, and a last shuffle drops
// every fourth byte.
#include "CCSyncBase64Kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

// The classes, one bit each, by a character's high nibble: 0x01 for 2 ('+', '/'), 0x02 for 3
// (digits), 0x04 for 4 and 6 (letters A-O, a-o), 0x08 for 5 and 7 (P-Z, p-z), and 0x10 for
// every nibble no character of the alphabet has.
#define HIGH_NIBBLE_CLASSES 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, \
  0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10
// By low nibble, the classes it is *not* a character of (and always 0x10): 0 is a digit, P or
// p; 1-9 a digit or a letter; A (10) a letter of either half; B '+' or a letter A-O/a-o;
// C-E such a letter only; F '/' or such a letter. A character is in the alphabet exactly when
// its two entries share no bit.
#define LOW_NIBBLE_EXCLUDED 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, \
  0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A
// What to add to a character to get its value, by high nibble (1 for '/', whose high nibble
// 2 is lowered by one): '/' 47 -> 63, '+' 43 -> 62, digits 48 -> 52, A 65 -> 0, a 97 -> 26.
#define OFFSETS 0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0

__attribute__((target("ssse3")))
static size_t decode_blocks_ssse3(const uint8_t *text, size_t blocks, uint8_t *output) {
  const __m128i high_classes = _mm_setr_epi8(HIGH_NIBBLE_CLASSES);
  const __m128i low_excluded = _mm_setr_epi8(LOW_NIBBLE_EXCLUDED);
  const __m128i offsets = _mm_setr_epi8(OFFSETS);
  const __m128i nibble = _mm_set1_epi8(0x0f);
  const __m128i slash = _mm_set1_epi8('/');
  // Byte pairs (a, b) to a * 64 + b; then 16-bit pairs (ab, cd) to ab * 4096 + cd.
  const __m128i pair_weights = _mm_set1_epi32(0x01400140);
  const __m128i quad_weights = _mm_set1_epi32(0x00011000);
  // Each 32-bit lane's three bytes, most significant first; the last four bytes zero.
  const __m128i pack = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
  size_t block = 0;
  for (; block < blocks; block++) {
    const __m128i characters = _mm_loadu_si128((const __m128i *)(text + 16 * block));
    const __m128i high = _mm_and_si128(_mm_srli_epi32(characters, 4), nibble);
    const __m128i low = _mm_and_si128(characters, nibble);
    const __m128i clash = _mm_and_si128(_mm_shuffle_epi8(low_excluded, low), _mm_shuffle_epi8(high_classes, high));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(clash, _mm_setzero_si128())) != 0xffff) break;
    const __m128i offset = _mm_shuffle_epi8(offsets, _mm_add_epi8(high, _mm_cmpeq_epi8(characters, slash)));
    const __m128i values = _mm_add_epi8(characters, offset);
    const __m128i pairs = _mm_maddubs_epi16(values, pair_weights);
    const __m128i quads = _mm_madd_epi16(pairs, quad_weights);
    _mm_storeu_si128((__m128i *)(output + 12 * block), _mm_shuffle_epi8(quads, pack));
  }
  return block;
}

size_t ccsync_base64_decode_blocks(const uint8_t *text, size_t blocks, uint8_t *output) {
  // A load and a test of what the run time learned of the processor at start.
  return __builtin_cpu_supports("ssse3") ? decode_blocks_ssse3(text, blocks, output) : 0;
}
#else
size_t ccsync_base64_decode_blocks(const uint8_t *text, size_t blocks, uint8_t *output) {
  (void)text;
  (void)blocks;
  (void)output;
  return 0;
}
#endif
