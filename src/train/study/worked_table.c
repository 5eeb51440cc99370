/* worked_table.c: the seed texts' worked examples, transcribed (see worked.h): for each, the
 * seed file, the place (section, line, a short quote), the inputs and the figures as printed,
 * with the rounding they were printed at. The notes say what is wrong where the seed's figure
 * is; they are checked against the recomputation (tests/test_worked.c), never the other way. */
#include "train/study/worked.h"

#include <math.h>

#define F000 "000_49fd20e01785f00a.txt"
#define F001 "001_d799740502060d11.txt"
#define F002 "002_ca46430d25cdbe6d.txt"
#define F003 "003_f816199ab5036d9d.txt"
#define F004 "004_3507279b3c6e822b.txt"
#define NA NAN
/* inputs: the array and its length */
#define IN(...)                                                                                    \
    .in = (const double[]){__VA_ARGS__}, .n_in = sizeof((double[]){__VA_ARGS__}) / sizeof(double)

/* 001's worked example: Q, K, V, 3 tokens of width 4 (l. 160-162) */
#define QKV001 IN(1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, /* Q */ \
                  1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0, /* K */ \
                  1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0) /* V */

const tt_worked_example tt_worked_examples[] = {
    /* ---- 000: Self-Attention ---- */
    {"000-scale", F000,
     "2단계: 스케일링, l. 111-113: `d_k = 64일 때: 스케일링 후: [4, 0.125, 0.25]`",
     "[32, 1, 2] / sqrt(64)", "[4, 0.125, 0.25]", TT_WK_SCALE, IN(32, 1, 2), {64}, 3,
     {4, 0.125, 0.25}, 0.001, NULL, 4, NULL},
    {"000-unscaled", F000,
     "2단계, l. 112: `스케일링 전: [32, 1, 2] → softmax → [1.00, 0.00, 0.00]`",
     "softmax([32, 1, 2])", "[1.00, 0.00, 0.00]", TT_WK_SOFTMAX, IN(32, 1, 2), {0}, 3,
     {1.00, 0.00, 0.00}, 0.01, NULL, 4, NULL},
    {"000-scaled", F000,
     "2단계, l. 113: `스케일링 후: [4, 0.125, 0.25] → softmax → [0.95, 0.02, 0.03]`",
     "softmax([32, 1, 2] / sqrt(64))", "[0.95, 0.02, 0.03]", TT_WK_SOFTMAX, IN(32, 1, 2), {64},
     3, {0.95, 0.02, 0.03}, 0.01, NULL, 4,
     "e^4 = 54.60 against e^0.125 + e^0.25 = 2.42: the first weight is 0.958 (0.96), and the "
     "third is e^0.25 / 57.02 = 0.023 (0.02), not 0.03"},
    {"000-variance", F000,
     "수학적 근거, l. 130-141: 1000 pairs at `d_k = 64`: `# 평균: ~0, 분산: ~64 (= d_k)`, then "
     "`# 평균: ~0, 분산: ~1`",
     "1000 pairs q, k ~ N(0, I_64): q.k by a batched tt_matmul, / sqrt(64) by tt_scale "
     "(the study's tt_study_variance; the scaled mean is the mean times 1/8)",
     "mean ~0, var ~64; scaled: mean ~0, var ~1", TT_WK_VARIANCE, NULL, 0, {64, 1000}, 4,
     {0, 64, 0, 1}, NA, NULL, 3,
     "\"~\" read as: within 3 standard errors of 1000 samples"},
    {"000-row", F000,
     "1단계 (l. 95) and 3단계 (l. 154): the 앉았다 scores `[0.3, 0.2, 0.4, 0.5]`, then "
     "`\"앉았다\"의 attention weights: [0.35, 0.15, 0.20, 0.30]`",
     "softmax([0.3, 0.2, 0.4, 0.5]) (a 1/sqrt(d_k) would only flatten it further)",
     "[0.35, 0.15, 0.20, 0.30]", TT_WK_SOFTMAX, IN(0.3, 0.2, 0.4, 0.5), {0}, 4,
     {0.35, 0.15, 0.20, 0.30}, 0.01, NULL, 4,
     "Inconsistent with the seed's own score row: softmax keeps the order of the scores at any "
     "scaling, so 앉았다 (score 0.5) must get the largest weight and 매트 (0.2) the smallest; "
     "the seed gives 고양이가 (0.3) the largest"},
    {"000-tau-0.5", F000,
     "Temperature Scaling, l. 171-174: `τ = 0.5: softmax([4.0, 2.0, 1.0]) = [0.84, 0.11, 0.04]`",
     "[2, 1, 0.5] / 0.5 by tt_scale, then tt_softmax", "[4.0, 2.0, 1.0] → [0.84, 0.11, 0.04]",
     TT_WK_TEMP, IN(2, 1, 0.5), {0.5}, 6, {4, 2, 1, 0.84, 0.11, 0.04}, 0.01, NULL, 4, NULL},
    {"000-tau-1", F000,
     "Temperature Scaling, l. 176-177: `τ = 1.0: softmax([2.0, 1.0, 0.5]) = [0.59, 0.22, 0.13]`",
     "[2, 1, 0.5] / 1 by tt_scale, then tt_softmax", "[2.0, 1.0, 0.5] → [0.59, 0.22, 0.13]",
     TT_WK_TEMP, IN(2, 1, 0.5), {1}, 6, {2, 1, 0.5, 0.59, 0.22, 0.13}, 0.01, NULL, 4,
     "e^2 : e^1 : e^0.5 = 7.39 : 2.72 : 1.65 over 11.76 gives [0.63, 0.23, 0.14]; the seed's "
     "row sums to 0.94, not 1"},
    {"000-tau-2", F000,
     "Temperature Scaling, l. 179-180: `τ = 2.0: softmax([1.0, 0.5, 0.25]) = [0.42, 0.25, 0.20]`",
     "[2, 1, 0.5] / 2 by tt_scale, then tt_softmax", "[1.0, 0.5, 0.25] → [0.42, 0.25, 0.20]",
     TT_WK_TEMP, IN(2, 1, 0.5), {2}, 6, {1, 0.5, 0.25, 0.42, 0.25, 0.20}, 0.01, NULL, 4,
     "e^1 : e^0.5 : e^0.25 = 2.72 : 1.65 : 1.28 over 5.65 gives [0.48, 0.29, 0.23]; the seed's "
     "row sums to 0.87, not 1"},
    {"000-dropout", F000,
     "Attention Dropout, l. 196: `F.dropout(attn_weights, p=0.1, ...)  # 10% 확률로 연결 끊기`",
     "tt_dropout(p = 0.1, training) on 100,000 attention weights (softmax of N(0,1) scores, "
     "1000 rows of 100 keys): the fraction dropped, and kept weight / weight",
     "10% dropped (the scale of the kept ones is not given)", TT_WK_DROPOUT, NULL, 0,
     {0.1, 1000, 100}, 2, {0.10, NA}, NA, NULL, 4,
     "Inverted dropout, as F.dropout: the kept weights are divided by 1 - p = 0.9, so a row "
     "sums to 1 only on average"},
    {"000-maps", F000,
     "Attention Map의 학습 과정, l. 210-229: the 4x4 maps early, middle and late in training; "
     "l. 150: `softmax: 각 행을 확률로 변환 (합 = 1)`",
     "the sum of each of the 12 rows, by tt_matmul with a column of ones",
     "rows of softmax weights: each sums to 1", TT_WK_ROWSUM,
     IN(0.25, 0.25, 0.25, 0.25, 0.24, 0.26, 0.25, 0.25, 0.25, 0.25, 0.24, 0.26, 0.26, 0.24, 0.25,
        0.25, /* early */
        0.40, 0.15, 0.10, 0.35, 0.10, 0.35, 0.40, 0.15, 0.08, 0.42, 0.30, 0.20, 0.35, 0.10, 0.25,
        0.30, /* middle */
        0.45, 0.05, 0.05, 0.45, 0.05, 0.40, 0.50, 0.05, 0.05, 0.50, 0.30, 0.15, 0.50, 0.05, 0.15,
        0.30 /* late */),
     {4}, 12, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.04, NULL, 4,
     "Four weights printed to 2 decimals: a sum within 0.02 of 1 agrees"},
    {"000-uniform", F000,
     "Attention Map의 학습 과정, l. 212: `[ 0.25 0.25 0.25 0.25 ] ← 거의 균일 분포`",
     "softmax of 4 equal scores (a map before the scores differ)", "[0.25, 0.25, 0.25, 0.25]",
     TT_WK_SOFTMAX, IN(0, 0, 0, 0), {0}, 4, {0.25, 0.25, 0.25, 0.25}, 0.01, NULL, 4, NULL},
    {"000-shape-1head", F000,
     "구현, l. 276-279: `x = torch.randn(2, 5, 64)`, `SelfAttention(64)`, `torch.Size([2, 5, 64])`",
     "the project's attention layer (tt_nn_mha, 1 head, d 64; it adds an output projection, "
     "64 to 64) on x ~ N(0,1) [2, 5, 64]: the output's dims",
     "(2, 5, 64)", TT_WK_MHA, NULL, 0, {2, 5, 64, 1}, 3, {2, 5, 64}, 1, NULL, 0, NULL},
    {"000-heads", F000,
     "Multi-Head Attention, l. 305: `전체 차원(768)을 Head 수(12)로 나눠서, 각 Head는 64차원 ... "
     "총 연산량은 Single-Head와 동일`",
     "d_k from tt_nn_attn_scale(sqrt_dk, 1, 768, 12) = 1/sqrt(d_k); then the QK^T "
     "multiply-adds of 12 heads of d_k over those of 1 head of 768",
     "d_k 64; the same cost (ratio 1)", TT_WK_HEADS, NULL, 0, {768, 12}, 2, {64, 1}, 0.001,
     NULL, 4, NULL},
    {"000-shape-mha", F000,
     "Multi-Head Attention 구현, l. 336-338: `MultiHeadSelfAttention(768, num_heads=12)`, "
     "`torch.randn(32, 196, 768)  # 배치 32, 14×14 패치`, `# (32, 196, 768)`",
     "14 x 14 patches; the project's attention layer (tt_nn_mha, 12 heads, d 768, PyTorch's "
     "initial values) on x ~ N(0,1) [32, 196, 768]: the output's dims",
     "196 patches; (32, 196, 768)", TT_WK_MHA, NULL, 0, {32, 196, 768, 12, 14, 14}, 4,
     {196, 32, 196, 768}, 1, NULL, 0, NULL},
    {"000-cost-100", F000, "계산 복잡도, l. 353: `문장 (100 토큰)`, N 100: N² `10,000`, `~40 KB`",
     "N^2 scores, and their float32 bytes (4 each) in KiB", "10,000; ~40 KB", TT_WK_COST, NULL,
     0, {100, 1024}, 2, {10000, 40}, NA, (const double[]){1, 10}, 2, NULL},
    {"000-cost-196", F000, "계산 복잡도, l. 354: `ViT (14×14 패치)`, N 196: N² `38,416`, `~150 KB`",
     "N^2 scores, and their float32 bytes in KiB", "38,416; ~150 KB", TT_WK_COST, NULL, 0,
     {196, 1024}, 2, {38416, 150}, NA, (const double[]){1, 10}, 2, NULL},
    {"000-cost-1024", F000,
     "계산 복잡도, l. 355: `고해상도 (32×32)`, N 1,024: N² `1,048,576`, `~4 MB`",
     "N^2 scores, and their float32 bytes in MiB", "1,048,576; ~4 MB", TT_WK_COST, NULL, 0,
     {1024, 1048576}, 2, {1048576, 4}, NA, (const double[]){1, 1}, 2, NULL},
    {"000-cost-16384", F000, "계산 복잡도, l. 356: `매우 긴 시퀀스`, N 16,384: N² `268M`, `~1 GB`",
     "N^2 scores, and their float32 bytes in GiB", "268M; ~1 GB", TT_WK_COST, NULL, 0,
     {16384, 1073741824}, 2, {268e6, 1}, NA, (const double[]){1e6, 1}, 2, NULL},

    /* ---- 001: Self-Attention and Q/K/V ---- */
    {"001-qk", F001,
     "구체적 숫자 예시, l. 164-167: `Step 1: Q @ K^T = [[1, 1, 2], [1, 1, 0], [2, 0, 1]]`",
     "Q K^T by tt_matmul (Q, K as printed, l. 160-162)", "[[1, 1, 2], [1, 1, 0], [2, 0, 1]]",
     TT_WK_QKV, QKV001, {0, 3, 4}, 9, {1, 1, 2, 1, 1, 0, 2, 0, 1}, 1, NULL, 4, NULL},
    {"001-scaled", F001,
     "l. 169-172: `Step 2: / sqrt(4) = / 2` → "
     "`[[0.5, 0.5, 1.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.5]]`",
     "Q K^T times tt_nn_attn_scale(sqrt_dk, 1, 4, 1) by tt_scale",
     "[[0.5, 0.5, 1.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.5]]", TT_WK_QKV, QKV001, {1, 3, 4}, 9,
     {0.5, 0.5, 1.0, 0.5, 0.5, 0.0, 1.0, 0.0, 0.5}, 0.1, NULL, 4, NULL},
    {"001-w1", F001,
     "l. 174-175: `Step 3: softmax ≈ [[0.26, 0.26, 0.48], ← 토큰1은 토큰3에 가장 주목`",
     "tt_softmax of row 1, [0.5, 0.5, 1.0]", "[0.26, 0.26, 0.48]", TT_WK_QKV, QKV001,
     {2, 3, 4}, 3, {0.26, 0.26, 0.48}, 0.01, NULL, 4,
     "e^1 / (2 e^0.5 + e^1) = 2.718 / 6.016 = 0.452: [0.27, 0.27, 0.45]; token 3 is still "
     "the most attended, as the seed says"},
    {"001-w2", F001, "l. 176: `[0.39, 0.39, 0.22], ← 토큰2는 토큰1,2에 비슷하게 주목`",
     "tt_softmax of row 2, [0.5, 0.5, 0.0]", "[0.39, 0.39, 0.22]", TT_WK_QKV, QKV001, {3, 3, 4},
     3, {0.39, 0.39, 0.22}, 0.01, NULL, 4,
     "e^0.5 / (2 e^0.5 + 1) = 1.649 / 4.297 = 0.384: [0.38, 0.38, 0.23], each off by 0.01"},
    {"001-w3", F001, "l. 177: `[0.51, 0.19, 0.30]] ← 토큰3은 토큰1에 가장 주목`",
     "tt_softmax of row 3, [1.0, 0.0, 0.5]", "[0.51, 0.19, 0.30]", TT_WK_QKV, QKV001, {4, 3, 4},
     3, {0.51, 0.19, 0.30}, 0.01, NULL, 4,
     "The third weight is e^0.5 / (e^1 + 1 + e^0.5) = 1.649 / 5.367 = 0.307, which rounds to "
     "0.31 (the row rounded right sums to 1.01; the seed's 0.30 makes it 1.00)"},
    {"001-out", F001, "l. 179: `Step 4: @ V → 최종 출력` (no figures printed)",
     "the weights times V (as printed, l. 160-162) by tt_matmul; the fused tt_sdpa gives the "
     "same weights and output",
     "(none)", TT_WK_QKV, QKV001, {5, 3, 4}, 12, {NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA},
     NA, NULL, 4, NULL},
    {"001-std", F001,
     "5. 왜 sqrt(d_k)로 나누는가, l. 197-199: `d_k = 64: 표준편차 ≈ 8`, `128: ≈ 11.3`, `512: ≈ "
     "22.6`",
     "sqrt(d_k) = 1 / tt_nn_attn_scale(sqrt_dk, 1, d_k, 1)", "8, 11.3, 22.6", TT_WK_SQRT,
     IN(64, 128, 512), {0}, 3, {8, 11.3, 22.6}, 0.1, NULL, 4, NULL},
    {"001-saturated", F001,
     "Softmax의 문제, l. 207: `softmax([20, -20, 0]) ≈ [1.00, 0.00, 0.00] ← 거의 one-hot!`",
     "softmax([20, -20, 0])", "[1.00, 0.00, 0.00]", TT_WK_SOFTMAX, IN(20, -20, 0), {0}, 3,
     {1.00, 0.00, 0.00}, 0.01, NULL, 4, NULL},
    {"001-gentle", F001,
     "Softmax의 문제, l. 208: `softmax([2, -2, 0]) ≈ [0.71, 0.01, 0.10] ← 적절한 분포`",
     "softmax([2, -2, 0])", "[0.71, 0.01, 0.10]", TT_WK_SOFTMAX, IN(2, -2, 0), {0}, 3,
     {0.71, 0.01, 0.10}, 0.01, NULL, 4,
     "e^2 / (e^2 + e^-2 + 1) = 7.389 / 8.524 = 0.867: [0.87, 0.02, 0.12]; the seed's row sums "
     "to 0.82, not 1"},
    {"001-vla-scale", F001,
     "VLA에서의 실제 값, l. 223-224: `d_k = 128 → sqrt(128) ≈ 11.3`, `d_k = 64 → sqrt(64) = 8`",
     "1 / tt_nn_attn_scale(sqrt_dk, 1, d_k, 1)", "11.3, 8", TT_WK_SQRT, IN(128, 64), {0}, 2,
     {11.3, 8}, 0.1, NULL, 4, NULL},
    {"001-wq", F001,
     "차원의 의미, l. 122-125: `d_model = 4096`, `W_Q shape: (4096, 128) → 4096차원 입력을 128차원 "
     "Query로 변환`",
     "x [3 tokens, 4096] times W_Q [4096, 128] by tt_matmul: the dims of Q",
     "(tokens, 128)", TT_WK_MATMUL, NULL, 0, {3, 4096, 128}, 2, {NA, 128}, 1, NULL, 0, NULL},
    {"001-q2", F001, "연습 주제 2, l. 290: `d_k = 256일 때 sqrt(d_k)는 얼마인가?` (a question)",
     "1 / tt_nn_attn_scale(sqrt_dk, 1, 256, 1): the spread of unscaled scores (1 after the "
     "division)", "(no answer given)", TT_WK_SQRT, IN(256), {0}, 1, {NA}, NA, NULL, 4, NULL},
    {"001-q3", F001,
     "연습 주제 3, l. 292: `N=1000 ... score 행렬 크기는? N=4000이면? ... 4배 늘면 연산량은 몇 배` "
     "(a question)",
     "N^2 for N 1000 and 4000 (tt_shape_numel), and their ratio", "(no answer given)",
     TT_WK_SQUARES, IN(1000, 4000), {0}, 3, {NA, NA, NA}, NA, NULL, 0, NULL},
    {"001-pairs", F001,
     "Self-Attention vs RNN, l. 279: `이미지 패치(256개) + 텍스트(수백 토큰) → 수십만 개의 쌍`",
     "(256 + 300)^2 query-key pairs, taking 300 text tokens for 수백 (hundreds)",
     "수십만, hundreds of thousands: 10^5 to 10^6, so 550,000", TT_WK_SQUARES, IN(556), {0},
     1, {550000}, 900000, NULL, 0,
     "Holds for 100 to 743 text tokens; from 744 on, (256 + N)^2 reaches a million"},

    /* ---- 002: Scaled Dot-Product Attention ---- */
    {"002-variance", F002,
     "내적의 기댓값과 분산, l. 127-163: `E[q·k] = 0`, `Var(q·k) = d_k`, `Var(q·k / √d_k) = 1`",
     "10,000 pairs q, k ~ N(0, I_256) (tt_study_variance, as 000-variance), d_k 256",
     "0; d_k = 256; 0; 1", TT_WK_VARIANCE, NULL, 0, {256, 10000}, 4, {0, 256, 0, 1}, NA, NULL,
     3, "Exact in expectation; a sample agrees within 3 standard errors"},
    {"002-pad", F002,
     "3단계 마스킹, l. 190: `패딩 토큰 ... 스코어 값에 매우 작은 음수(예: -1e9)를 더해준다 ... "
     "어텐션 가중치를 거의 0으로`",
     "scores [1, 2, 0.5] with key 3 padding: softmax(scores + [0, 0, -1e9]) by tt_add and "
     "tt_softmax, then tt_sdpa with its own padding mask (-inf)",
     "padding weight ≈ 0", TT_WK_PAD, IN(1, 2, 0.5), {0}, 6, {NA, NA, 0, NA, NA, 0}, 1e-6,
     NULL, 4, "The weight is exactly 0: exp(-1e9) underflows, and the project's -inf is exact"},
    {"002-causal", F002,
     "룩-어헤드 마스크, l. 191: `i보다 뒤에 있는 위치들의 스코어 값을 마스킹 ... 상삼각행렬(upper "
     "triangular matrix) 형태`",
     "tt_sdpa, causal, 4 tokens with equal scores: zero weights above the diagonal (j > i), "
     "zero weights on or below it, the largest weight above it",
     "the strict upper triangle: 6 of 16 at T = 4", TT_WK_CAUSAL, NULL, 0, {4}, 3, {6, 0, 0},
     1e-6, NULL, 0, NULL},
    {"002-shapes", F002,
     "5단계 요약 표, l. 205-209: scores, scaled, masked, weights `(N, seq_len, seq_len)`; output "
     "`(N, seq_len, d_v)`",
     "N 2, seq_len 3, d_k 4, d_v 5 through tt_matmul, tt_scale, tt_add (a causal -inf mask), "
     "tt_softmax, tt_matmul: the dims of each step",
     "(N, seq_len, seq_len) x 4, (N, seq_len, d_v)", TT_WK_SHAPES, NULL, 0, {2, 3, 4, 5}, 15,
     {2, 3, 3, 2, 3, 3, 2, 3, 3, 2, 3, 3, 2, 3, 5}, 1, NULL, 0, NULL},

    /* ---- 003: Self-Attention and the Transformer ---- */
    {"003-sqrt", F003, "5. Scaled Dot-Product Attention, l. 83: `d_k = 64이면 sqrt(d_k) = 8`",
     "1 / tt_nn_attn_scale(sqrt_dk, 1, 64, 1)", "8", TT_WK_SQRT, IN(64), {0}, 1, {8}, 1, NULL,
     4, NULL},
    {"003-posenc", F003,
     "8. Positional Encoding, l. 131-133: `PE(pos, 2i) = sin(pos / 10000^{2i/d})`, cos for 2i+1 (a "
     "formula, no values)",
     "the project's sinusoidal table (tt_nn_posenc_forward on zeros [1, 3, 4]): positions 0, 1, "
     "2 at d = 4", "(formula only)", TT_WK_POSENC, NULL, 0, {3, 4}, 12,
     {NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA}, NA, NULL, 5, NULL},
    {"003-causal", F003,
     "10. Transformer의 전체 구조, l. 179: `Softmax 입력에서 미래 단어의 가중치를 −∞로 설정`",
     "tt_sdpa, causal, 4 tokens: the largest weight on a future key", "exp(−∞) = 0",
     TT_WK_CAUSAL, NULL, 0, {4}, 3, {NA, NA, 0}, 1e-6, NULL, 0, NULL},
    {"003-ranges", F003, "11. ReLU와 tanh의 비교, l. 187: `출력 범위: ReLU [0,∞), tanh [−1,1]`",
     "min of tt_relu([-3, -0.5, 0, 0.5, 20]), tt_relu(20); tanh(±20) as softmax([x, -x])_0 - "
     "softmax([x, -x])_1 by tt_softmax (the project has no tanh op)",
     "[0, ∞); [−1, 1]", TT_WK_RANGES, IN(-3, -0.5, 0, 0.5, 20), {0}, 4, {0, NA, 1, -1}, 1e-6,
     NULL, 4, "tanh only approaches ±1 (the range is open, (−1, 1)); tanh(±20) rounds to ±1"},

    /* ---- 004: Self Attention notes ---- */
    {"004-cross", F004,
     "l. 14-16 and 32: `Q ∈ R^{T_q × d_k}`, `K ∈ R^{T_k × d_k}`, `V ∈ R^{T_k × d_v}`; `어텐션 "
     "가중치의 합이 1`",
     "T_q 2, T_k 3, d_k 4, d_v 5, Q, K, V ~ N(0,1), by tt_matmul, tt_scale, tt_softmax, "
     "tt_matmul: the weights' dims, the output's dims, each weight row's sum",
     "weights sum to 1 per query", TT_WK_CROSS, NULL, 0, {2, 3, 4, 5}, 6,
     {NA, NA, NA, NA, 1, 1}, 1e-6, NULL, 4, NULL},
    {"004-heads", F004,
     "code, l. 55-60: `Q: (batch_size, num_heads, seq_len, d_k)` ... `어텐션 출력 (batch_size, "
     "num_heads, seq_len, d_k)`; l. 29: `d_k = d_model/h`",
     "batch 2, 3 heads, seq_len 4, d_k 5 by batched tt_matmul and tt_softmax; d_k of "
     "tt_nn_attn_scale for d_model 15, 3 heads",
     "(2, 3, 4, 5) here; d_k = 15 / 3", TT_WK_HEADS4, NULL, 0, {2, 3, 4, 5}, 5, {2, 3, 4, 5, 5},
     0.001, NULL, 0, NULL},
};

const int tt_worked_count = (int)(sizeof tt_worked_examples / sizeof tt_worked_examples[0]);

const char *const tt_worked_skipped[] = {
    "000, l. 28-35: a CNN kernel of 3 sees 3 neighbours: there is no convolution here",
    "000, l. 91-95: the 4x4 score matrix: inputs, nothing derived from them but the 앉았다 row "
    "(000-row)",
    "000, l. 203: `p=0.0~0.1 (ViT: 0.0, BERT: 0.1)`: other models' settings",
    "000, l. 210-229: the maps' weights themselves: illustrations of a training; only their rows "
    "are checked (000-maps); this project's own maps sharpen in `attention/` of a run",
    "000, l. 364: Flash Attention `2-4배 빠름`: no fused GPU kernel has been timed here",
    "001, l. 13: `VLA 추론(inference)의 70% 이상`: no VLA model here",
    "001, l. 122-123: Llama 2-7B's `d_model = 4096`, `d_k = d_v = 128`: facts about another "
    "model (only the product's shape is recomputed, 001-wq)",
    "001, l. 201: scores `[-20, +20] 범위로 퍼지면`: a loose range (about one standard "
    "deviation at d_k 512, 22.6), no figure to recompute",
    "001, l. 235-239: the `bank` vectors `[0.3, 0.7, 0.1, ...]`: illustrations without inputs",
    "003, l. 202: `6~12층`: an empirical claim about other models",
    "004, l. 37-41: the `Time flies like an arrow` and `Fruit flies like a banana` maps are "
    "pictures, with no numbers in the text; docs/training.md shows this project's trained maps "
    "of both sentences",
};

const int tt_worked_n_skipped = (int)(sizeof tt_worked_skipped / sizeof tt_worked_skipped[0]);
