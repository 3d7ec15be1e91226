// The vector kernel of the etcd client's base64 decoder (CCSyncEtcd's Base64).
#ifndef CCSYNC_BASE64_KERNEL_H
#define CCSYNC_BASE64_KERNEL_H
#include <stddef.h>
#include <stdint.h>

// Decodes whole blocks of 16 characters of standard base64 (no padding inside) from `text`
// into 12 bytes each at `output`, at most `blocks` of them, and stops before the first block
// holding a character outside the alphabet (padding included), which it leaves to the caller.
// Each block's store writes 16 bytes, the last 4 of them zero: `output` must have room for
// 12 * blocks + 4 bytes. Returns how many blocks it decoded: none on a processor without
// SSSE3, or not x86-64.
size_t ccsync_base64_decode_blocks(const uint8_t *text, size_t blocks, uint8_t *output);
#endif
