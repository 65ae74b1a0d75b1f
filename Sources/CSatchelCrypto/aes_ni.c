// AES-128 in counter mode and in CBC mode with the x86-64 AES instructions, in place: the key schedule and the rounds
// as FIPS-197 defines them, through the AESENC/AESDEC/AESIMC/AESKEYGENASSIST instructions the way Intel's AES-NI white
// paper describes, and CBC as SP 800-38A does.
// Portable builds (other processors) report the path unavailable and Satchel uses swift-crypto instead.
#include "CSatchelCrypto.h"
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define SATCHEL_AES_TARGET __attribute__((target("aes,ssse3")))

int satchel_aes128_ctr_available(void) {
    static int known = -1;  // read and written atomically: any thread may ask first
    int value = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (value < 0) {
        __builtin_cpu_init();
        value = __builtin_cpu_supports("aes") && __builtin_cpu_supports("ssse3") ? 1 : 0;
        __atomic_store_n(&known, value, __ATOMIC_RELAXED);
    }
    return value;
}

/// Clears `count` bytes of key material the compiler may not optimise away.
static void clear_secret(void *secret, size_t count) {
    volatile uint8_t *bytes = (volatile uint8_t *)secret;
    for (size_t i = 0; i < count; i++) bytes[i] = 0;
}

SATCHEL_AES_TARGET static inline __m128i expand_step(__m128i key, __m128i assist) {
    assist = _mm_shuffle_epi32(assist, 0xFF);
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    return _mm_xor_si128(key, assist);
}

SATCHEL_AES_TARGET static void expand_key(const uint8_t key[16], __m128i schedule[11]) {
    schedule[0] = _mm_loadu_si128((const __m128i *)key);
    schedule[1] = expand_step(schedule[0], _mm_aeskeygenassist_si128(schedule[0], 0x01));
    schedule[2] = expand_step(schedule[1], _mm_aeskeygenassist_si128(schedule[1], 0x02));
    schedule[3] = expand_step(schedule[2], _mm_aeskeygenassist_si128(schedule[2], 0x04));
    schedule[4] = expand_step(schedule[3], _mm_aeskeygenassist_si128(schedule[3], 0x08));
    schedule[5] = expand_step(schedule[4], _mm_aeskeygenassist_si128(schedule[4], 0x10));
    schedule[6] = expand_step(schedule[5], _mm_aeskeygenassist_si128(schedule[5], 0x20));
    schedule[7] = expand_step(schedule[6], _mm_aeskeygenassist_si128(schedule[6], 0x40));
    schedule[8] = expand_step(schedule[7], _mm_aeskeygenassist_si128(schedule[7], 0x80));
    schedule[9] = expand_step(schedule[8], _mm_aeskeygenassist_si128(schedule[8], 0x1B));
    schedule[10] = expand_step(schedule[9], _mm_aeskeygenassist_si128(schedule[9], 0x36));
}

// The counter as two native 64-bit halves (high, low) of the big-endian 128-bit number.
typedef struct { uint64_t high, low; } counter128;

static inline counter128 counter_load(const uint8_t bytes[16]) {
    counter128 c = {0, 0};
    for (int i = 0; i < 8; i++) c.high = c.high << 8 | bytes[i];
    for (int i = 8; i < 16; i++) c.low = c.low << 8 | bytes[i];
    return c;
}

static inline void counter_next(counter128 *c) {
    c->low += 1;
    if (c->low == 0) c->high += 1;
}

SATCHEL_AES_TARGET static inline __m128i counter_block(counter128 c) {
    // Little-endian lanes (low, high), then every byte reversed: the big-endian block.
    const __m128i reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm_shuffle_epi8(_mm_set_epi64x((long long)c.high, (long long)c.low), reverse);
}

SATCHEL_AES_TARGET static inline __m128i encrypt_block(__m128i block, const __m128i schedule[11]) {
    block = _mm_xor_si128(block, schedule[0]);
    for (int round = 1; round < 10; round++) block = _mm_aesenc_si128(block, schedule[round]);
    return _mm_aesenclast_si128(block, schedule[10]);
}

SATCHEL_AES_TARGET static void ctr_xor(const __m128i schedule[11], counter128 counter, uint8_t *data, size_t length) {
    size_t offset = 0;
    // Four blocks at a time: the AES units work on several blocks at once.
    while (length - offset >= 64) {
        __m128i b0 = counter_block(counter); counter_next(&counter);
        __m128i b1 = counter_block(counter); counter_next(&counter);
        __m128i b2 = counter_block(counter); counter_next(&counter);
        __m128i b3 = counter_block(counter); counter_next(&counter);
        b0 = _mm_xor_si128(b0, schedule[0]); b1 = _mm_xor_si128(b1, schedule[0]);
        b2 = _mm_xor_si128(b2, schedule[0]); b3 = _mm_xor_si128(b3, schedule[0]);
        for (int round = 1; round < 10; round++) {
            b0 = _mm_aesenc_si128(b0, schedule[round]); b1 = _mm_aesenc_si128(b1, schedule[round]);
            b2 = _mm_aesenc_si128(b2, schedule[round]); b3 = _mm_aesenc_si128(b3, schedule[round]);
        }
        b0 = _mm_aesenclast_si128(b0, schedule[10]); b1 = _mm_aesenclast_si128(b1, schedule[10]);
        b2 = _mm_aesenclast_si128(b2, schedule[10]); b3 = _mm_aesenclast_si128(b3, schedule[10]);
        __m128i *p = (__m128i *)(data + offset);
        _mm_storeu_si128(p, _mm_xor_si128(_mm_loadu_si128(p), b0));
        _mm_storeu_si128(p + 1, _mm_xor_si128(_mm_loadu_si128(p + 1), b1));
        _mm_storeu_si128(p + 2, _mm_xor_si128(_mm_loadu_si128(p + 2), b2));
        _mm_storeu_si128(p + 3, _mm_xor_si128(_mm_loadu_si128(p + 3), b3));
        offset += 64;
    }
    while (length - offset >= 16) {
        __m128i *p = (__m128i *)(data + offset);
        _mm_storeu_si128(p, _mm_xor_si128(_mm_loadu_si128(p), encrypt_block(counter_block(counter), schedule)));
        counter_next(&counter);
        offset += 16;
    }
    if (offset < length) {
        uint8_t stream[16];
        _mm_storeu_si128((__m128i *)stream, encrypt_block(counter_block(counter), schedule));
        for (size_t i = 0; offset + i < length; i++) data[offset + i] ^= stream[i];
        clear_secret(stream, sizeof(stream));
    }
}

int satchel_aes128_ctr_xor(const uint8_t key[16], const uint8_t counter[16], uint8_t *data, size_t length) {
    if (!satchel_aes128_ctr_available()) return -1;
    if (length == 0) return 0;
    __m128i schedule[11];
    expand_key(key, schedule);
    ctr_xor(schedule, counter_load(counter), data, length);
    clear_secret(schedule, sizeof(schedule));  // the expanded key does not outlive the call
    return 0;
}

SATCHEL_AES_TARGET static void cbc_encrypt(const __m128i schedule[11], __m128i chain, uint8_t *data, size_t length) {
    // Each block waits for the one before: the chain is the whole cost, one block's ten rounds after another.
    for (size_t offset = 0; offset < length; offset += 16) {
        __m128i *p = (__m128i *)(data + offset);
        chain = encrypt_block(_mm_xor_si128(_mm_loadu_si128(p), chain), schedule);
        _mm_storeu_si128(p, chain);
    }
}

SATCHEL_AES_TARGET static void inverse_schedule(const __m128i schedule[11], __m128i inverse[11]) {
    inverse[0] = schedule[10];
    for (int round = 1; round < 10; round++) inverse[round] = _mm_aesimc_si128(schedule[10 - round]);
    inverse[10] = schedule[0];
}

SATCHEL_AES_TARGET static inline __m128i decrypt_block(__m128i block, const __m128i inverse[11]) {
    block = _mm_xor_si128(block, inverse[0]);
    for (int round = 1; round < 10; round++) block = _mm_aesdec_si128(block, inverse[round]);
    return _mm_aesdeclast_si128(block, inverse[10]);
}

SATCHEL_AES_TARGET static void cbc_decrypt(const __m128i inverse[11], __m128i previous, uint8_t *data, size_t length) {
    size_t offset = 0;
    // Decryption has no chain: four blocks at a time, each XORed with the cipher block before it.
    while (length - offset >= 64) {
        __m128i *p = (__m128i *)(data + offset);
        __m128i c0 = _mm_loadu_si128(p), c1 = _mm_loadu_si128(p + 1), c2 = _mm_loadu_si128(p + 2), c3 = _mm_loadu_si128(p + 3);
        __m128i b0 = _mm_xor_si128(c0, inverse[0]), b1 = _mm_xor_si128(c1, inverse[0]);
        __m128i b2 = _mm_xor_si128(c2, inverse[0]), b3 = _mm_xor_si128(c3, inverse[0]);
        for (int round = 1; round < 10; round++) {
            b0 = _mm_aesdec_si128(b0, inverse[round]); b1 = _mm_aesdec_si128(b1, inverse[round]);
            b2 = _mm_aesdec_si128(b2, inverse[round]); b3 = _mm_aesdec_si128(b3, inverse[round]);
        }
        b0 = _mm_aesdeclast_si128(b0, inverse[10]); b1 = _mm_aesdeclast_si128(b1, inverse[10]);
        b2 = _mm_aesdeclast_si128(b2, inverse[10]); b3 = _mm_aesdeclast_si128(b3, inverse[10]);
        _mm_storeu_si128(p, _mm_xor_si128(b0, previous));
        _mm_storeu_si128(p + 1, _mm_xor_si128(b1, c0));
        _mm_storeu_si128(p + 2, _mm_xor_si128(b2, c1));
        _mm_storeu_si128(p + 3, _mm_xor_si128(b3, c2));
        previous = c3;
        offset += 64;
    }
    while (offset < length) {
        __m128i *p = (__m128i *)(data + offset);
        __m128i cipher = _mm_loadu_si128(p);
        _mm_storeu_si128(p, _mm_xor_si128(decrypt_block(cipher, inverse), previous));
        previous = cipher;
        offset += 16;
    }
}

// Several segments at once, one chain each: a block of each chain goes through the rounds together, so the AES unit
// works on four blocks where one chain keeps it waiting for the block before (Intel's "multi-buffer" CBC). A lane
// shorter than the others, or unused, runs on its own chain without storing anything.
SATCHEL_AES_TARGET static inline __m128i lane_input(uint8_t *const data, size_t blocks, size_t index) {
    return index < blocks ? _mm_loadu_si128((const __m128i *)(data + 16 * index)) : _mm_setzero_si128();
}

SATCHEL_AES_TARGET static inline void lane_output(uint8_t *const data, size_t blocks, size_t index, __m128i block, __m128i *chain) {
    if (index < blocks) {
        *chain = block;
        _mm_storeu_si128((__m128i *)(data + 16 * index), block);
    }
}

SATCHEL_AES_TARGET static void cbc_encrypt_lanes(const __m128i schedule[11], __m128i chain[4], uint8_t *const data[4], const size_t blocks[4]) {
    size_t most = 0;
    for (int lane = 0; lane < 4; lane++) if (blocks[lane] > most) most = blocks[lane];
    // Written out lane by lane (as the counter mode above): the four chains stay in registers at any optimisation.
    __m128i c0 = chain[0], c1 = chain[1], c2 = chain[2], c3 = chain[3];
    for (size_t index = 0; index < most; index++) {
        __m128i b0 = _mm_xor_si128(_mm_xor_si128(lane_input(data[0], blocks[0], index), c0), schedule[0]);
        __m128i b1 = _mm_xor_si128(_mm_xor_si128(lane_input(data[1], blocks[1], index), c1), schedule[0]);
        __m128i b2 = _mm_xor_si128(_mm_xor_si128(lane_input(data[2], blocks[2], index), c2), schedule[0]);
        __m128i b3 = _mm_xor_si128(_mm_xor_si128(lane_input(data[3], blocks[3], index), c3), schedule[0]);
        for (int round = 1; round < 10; round++) {
            b0 = _mm_aesenc_si128(b0, schedule[round]); b1 = _mm_aesenc_si128(b1, schedule[round]);
            b2 = _mm_aesenc_si128(b2, schedule[round]); b3 = _mm_aesenc_si128(b3, schedule[round]);
        }
        b0 = _mm_aesenclast_si128(b0, schedule[10]); b1 = _mm_aesenclast_si128(b1, schedule[10]);
        b2 = _mm_aesenclast_si128(b2, schedule[10]); b3 = _mm_aesenclast_si128(b3, schedule[10]);
        lane_output(data[0], blocks[0], index, b0, &c0);
        lane_output(data[1], blocks[1], index, b1, &c1);
        lane_output(data[2], blocks[2], index, b2, &c2);
        lane_output(data[3], blocks[3], index, b3, &c3);
    }
}

int satchel_aes128_cbc(const uint8_t key[16], const uint8_t iv[16], uint8_t *data, size_t length, int encrypt) {
    if (!satchel_aes128_ctr_available()) return -1;
    if (length % 16 != 0) return -2;
    if (length == 0) return 0;
    __m128i schedule[11];
    expand_key(key, schedule);
    __m128i chain = _mm_loadu_si128((const __m128i *)iv);
    if (encrypt) {
        cbc_encrypt(schedule, chain, data, length);
    } else {
        __m128i inverse[11];
        inverse_schedule(schedule, inverse);
        cbc_decrypt(inverse, chain, data, length);
        clear_secret(inverse, sizeof(inverse));
    }
    clear_secret(schedule, sizeof(schedule));
    return 0;
}

int satchel_aes128_cbc_encrypt_lanes(const uint8_t key[16], const uint8_t *const ivs[], uint8_t *const data[], const size_t lengths[], int lanes) {
    if (!satchel_aes128_ctr_available()) return -1;
    if (lanes < 1 || lanes > 4) return -2;
    for (int lane = 0; lane < lanes; lane++) if (lengths[lane] % 16 != 0) return -2;
    __m128i schedule[11];
    expand_key(key, schedule);
    __m128i chain[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
    uint8_t *lanesData[4] = {NULL, NULL, NULL, NULL};
    size_t blocks[4] = {0, 0, 0, 0};
    for (int lane = 0; lane < lanes; lane++) {
        chain[lane] = _mm_loadu_si128((const __m128i *)ivs[lane]);
        lanesData[lane] = data[lane];
        blocks[lane] = lengths[lane] / 16;
    }
    cbc_encrypt_lanes(schedule, chain, lanesData, blocks);
    clear_secret(schedule, sizeof(schedule));
    return 0;
}

#else

int satchel_aes128_ctr_available(void) { return 0; }

int satchel_aes128_ctr_xor(const uint8_t key[16], const uint8_t counter[16], uint8_t *data, size_t length) {
    (void)key; (void)counter; (void)data; (void)length;
    return -1;
}

int satchel_aes128_cbc(const uint8_t key[16], const uint8_t iv[16], uint8_t *data, size_t length, int encrypt) {
    (void)key; (void)iv; (void)data; (void)length; (void)encrypt;
    return -1;
}

int satchel_aes128_cbc_encrypt_lanes(const uint8_t key[16], const uint8_t *const ivs[], uint8_t *const data[], const size_t lengths[], int lanes) {
    (void)key; (void)ivs; (void)data; (void)lengths; (void)lanes;
    return -1;
}

#endif
