// GPU side of gds-gate's verification: the same functions as harness/model/src/verify (the CPU
// reference), bit for bit, run over the device buffer where the bytes landed. Compiled at run time
// with NVRTC (by the Rust worker through cudarc, by the KvikIO worker through cupy.RawKernel).
//
// Word i (8 bytes, little-endian) of a generated file with seed s is mix64(s + (i + 1) * GAMMA).
// The checksum of a range is the wrapping sum of mix64(w_i ^ (i + 1) * CHECKSUM_GAMMA), a final
// partial word zero-padded. Each kernel takes the range's start in the buffer, its length in bytes
// and the file word index of its first byte (file offset / 8; ranges start 8-aligned in the file).
//
// Layout: a grid-stride loop, 16-byte loads when the range start is 16-byte aligned (two words per
// thread per step), warp-shuffle reductions and one atomic per warp.

typedef unsigned long long u64;

#define GAMMA 0x9E3779B97F4A7C15ULL
#define CHECKSUM_GAMMA 0xD1B54A32D192ED03ULL

__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 checksum_term(u64 word, u64 index) {
    return mix64(word ^ ((index + 1) * CHECKSUM_GAMMA));
}

// Little-endian word from bytes, `count` of them present (the rest zero).
__device__ __forceinline__ u64 load_bytes(const unsigned char* p, unsigned count) {
    u64 w = 0;
    for (unsigned b = 0; b < count; ++b) w |= ((u64)p[b]) << (8 * b);
    return w;
}

__device__ __forceinline__ u64 warp_sum(u64 v) {
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    return v;
}

__device__ __forceinline__ u64 warp_min(u64 v) {
    for (int d = 16; d > 0; d >>= 1) {
        u64 other = __shfl_down_sync(0xffffffffu, v, d);
        v = other < v ? other : v;
    }
    return v;
}

// Byte offset (relative to the range) of the first differing byte of word `w`, or ~0 if equal.
__device__ __forceinline__ u64 first_bad_byte(u64 found, u64 expected, u64 w, u64 valid_mask) {
    u64 diff = (found ^ expected) & valid_mask;
    return diff ? w * 8 + (__ffsll((long long)diff) - 1) / 8 : ~0ULL;
}

// out[0] += bad words, out[1] = min(first bad byte offset within the range). out[1] starts at ~0.
// The generator's counter advances by a constant per step, so it is carried in a register rather
// than multiplied out per word, and the detailed bookkeeping runs only for a mismatching pair.
extern "C" __global__ void exact_compare(const unsigned char* buf, u64 len, u64 seed, u64 first_word, u64* out) {
    const u64 full = len / 8;
    const unsigned tail = (unsigned)(len % 8);
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    // Counter of word w: seed + (first_word + w + 1) * GAMMA.
    const u64 base = seed + (first_word + 1) * GAMMA;
    u64 bad = 0, first = ~0ULL;
    if (((size_t)buf & 15) == 0) {
        const ulonglong2* pairs = (const ulonglong2*)buf;
        u64 counter = base + 2 * i * GAMMA;
        const u64 step = 2 * stride * GAMMA;
        for (u64 p = i; p < full / 2; p += stride, counter += step) {
            ulonglong2 v = pairs[p];
            u64 e0 = mix64(counter), e1 = mix64(counter + GAMMA);
            if ((v.x ^ e0) | (v.y ^ e1)) {
                u64 w = 2 * p;
                u64 f0 = first_bad_byte(v.x, e0, w, ~0ULL);
                u64 f1 = first_bad_byte(v.y, e1, w + 1, ~0ULL);
                bad += (f0 != ~0ULL) + (f1 != ~0ULL);
                first = min(first, min(f0, f1));
            }
        }
        if (i == 0 && (full & 1)) {
            u64 w = full - 1;
            u64 f = first_bad_byte(((const u64*)buf)[w], mix64(base + w * GAMMA), w, ~0ULL);
            bad += f != ~0ULL;
            first = min(first, f);
        }
    } else {
        for (u64 w = i; w < full; w += stride) {
            u64 f = first_bad_byte(load_bytes(buf + 8 * w, 8), mix64(base + w * GAMMA), w, ~0ULL);
            bad += f != ~0ULL;
            first = min(first, f);
        }
    }
    if (i == 0 && tail) {
        u64 mask = (1ULL << (8 * tail)) - 1;
        u64 f = first_bad_byte(load_bytes(buf + 8 * full, tail), mix64(base + full * GAMMA), full, mask);
        bad += f != ~0ULL;
        first = min(first, f);
    }
    bad = warp_sum(bad);
    first = warp_min(first);
    if ((threadIdx.x & 31) == 0) {
        if (bad) atomicAdd(&out[0], bad);
        if (first != ~0ULL) atomicMin(&out[1], first);
    }
}

// out[0] += the range's checksum sum (wrapping). The position key advances by a constant per step.
extern "C" __global__ void checksum(const unsigned char* buf, u64 len, u64 first_word, u64* out) {
    const u64 full = len / 8;
    const unsigned tail = (unsigned)(len % 8);
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    // Key of word w: (first_word + w + 1) * CHECKSUM_GAMMA.
    const u64 base = (first_word + 1) * CHECKSUM_GAMMA;
    u64 sum = 0;
    if (((size_t)buf & 15) == 0) {
        const ulonglong2* pairs = (const ulonglong2*)buf;
        u64 key = base + 2 * i * CHECKSUM_GAMMA;
        const u64 step = 2 * stride * CHECKSUM_GAMMA;
        for (u64 p = i; p < full / 2; p += stride, key += step) {
            ulonglong2 v = pairs[p];
            sum += mix64(v.x ^ key) + mix64(v.y ^ (key + CHECKSUM_GAMMA));
        }
        if (i == 0 && (full & 1)) sum += checksum_term(((const u64*)buf)[full - 1], first_word + full - 1);
    } else {
        for (u64 w = i; w < full; w += stride) sum += checksum_term(load_bytes(buf + 8 * w, 8), first_word + w);
    }
    if (i == 0 && tail) sum += checksum_term(load_bytes(buf + 8 * full, tail), first_word + full);
    sum = warp_sum(sum);
    if ((threadIdx.x & 31) == 0 && sum) atomicAdd(&out[0], sum);
}

// The bandwidth reference for `bench --gpu`: read every byte, as the kernels above do, and nothing
// else. out[0] ^= a fold of the data so that the loads cannot be optimised away.
extern "C" __global__ void plain_read(const unsigned char* buf, u64 len, u64* out) {
    const ulonglong2* pairs = (const ulonglong2*)buf;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 fold = 0;
    for (u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x; p < len / 16; p += stride) {
        ulonglong2 v = pairs[p];
        fold ^= v.x ^ v.y;
    }
    for (int d = 16; d > 0; d >>= 1) fold ^= __shfl_down_sync(0xffffffffu, fold, d);
    if ((threadIdx.x & 31) == 0 && fold) atomicXor(&out[0], fold);
}

// The writers' source: the generated bytes of a file from word `first_word` on, written into
// `len` bytes of `buf` (a final partial word truncated), made on the GPU, never copied from the
// host. out[0] += words written, so that a launch that did nothing is seen. `buf` is 8-byte
// aligned when the range starts at a file boundary that is; otherwise bytes are stored one by one.
extern "C" __global__ void fill(unsigned char* buf, u64 len, u64 seed, u64 first_word, u64* out) {
    const u64 full = len / 8;
    const unsigned tail = (unsigned)(len % 8);
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool aligned = (((u64)buf) & 7) == 0;
    u64 count = 0;
    for (u64 w = i; w < full; w += stride) {
        const u64 v = mix64(seed + (first_word + w + 1) * GAMMA);
        if (aligned) {
            ((u64*)buf)[w] = v;
        } else {
            for (unsigned b = 0; b < 8; ++b) buf[8 * w + b] = (unsigned char)(v >> (8 * b));
        }
        ++count;
    }
    if (i == 0 && tail) {
        const u64 v = mix64(seed + (first_word + full + 1) * GAMMA);
        for (unsigned b = 0; b < tail; ++b) buf[8 * full + b] = (unsigned char)(v >> (8 * b));
        ++count;
    }
    count = warp_sum(count);
    if ((threadIdx.x & 31) == 0 && count) atomicAdd(&out[0], count);
}
