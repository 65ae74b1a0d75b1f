#ifndef CSATCHEL_CRYPTO_H
#define CSATCHEL_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this processor has the AES instructions the in-place AES-CTR below uses (x86-64 with AES-NI and
/// SSSE3), else 0: the caller then uses its portable AES.
int satchel_aes128_ctr_available(void);

/// XORs the `length` bytes at `data`, in place, with the AES-128-CTR keystream of `key` whose first counter block is
/// `counter` (the 16 bytes as one big-endian number, incremented by one per block and wrapping). Encryption and
/// decryption are the same. Returns 0, or -1 when the instructions are not there (nothing is written). The
/// expanded key lives on the stack and is cleared before the function returns.
int satchel_aes128_ctr_xor(const uint8_t key[16], const uint8_t counter[16], uint8_t *data, size_t length);

#endif
