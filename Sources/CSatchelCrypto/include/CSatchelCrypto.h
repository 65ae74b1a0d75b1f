#ifndef CSATCHEL_CRYPTO_H
#define CSATCHEL_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this processor has the AES instructions every function below uses (x86-64 with AES-NI and SSSE3), else 0:
/// the caller then uses its portable AES.
int satchel_aes128_ctr_available(void);

/// XORs the `length` bytes at `data`, in place, with the AES-128-CTR keystream of `key` whose first counter block is
/// `counter` (the 16 bytes as one big-endian number, incremented by one per block and wrapping). Encryption and
/// decryption are the same. Returns 0, or -1 when the instructions are not there (nothing is written). The
/// expanded key lives on the stack and is cleared before the function returns.
int satchel_aes128_ctr_xor(const uint8_t key[16], const uint8_t counter[16], uint8_t *data, size_t length);

/// AES-128-CBC over the `length` bytes at `data` (whole blocks, no padding), in place: encrypted when `encrypt` is
/// not 0, else decrypted (four blocks at a time: decryption has no chain). `iv` is the block before the first.
/// Returns 0; -1 when the instructions are not there, -2 when `length` is not whole blocks (nothing is written).
/// The expanded keys live on the stack and are cleared before the function returns.
int satchel_aes128_cbc(const uint8_t key[16], const uint8_t iv[16], uint8_t *data, size_t length, int encrypt);

/// AES-128-CBC encryption of `lanes` (1 to 4) independent buffers at once, each in place from its own IV: `data[i]`
/// holds `lengths[i]` bytes (whole blocks). Their blocks go through the rounds together, so four segments take about
/// the time of the longest alone. Returns 0; -1 when the instructions are not there, -2 for a bad lane count or a
/// length that is not whole blocks (nothing is written).
int satchel_aes128_cbc_encrypt_lanes(const uint8_t key[16], const uint8_t *const ivs[], uint8_t *const data[], const size_t lengths[], int lanes);

#endif
