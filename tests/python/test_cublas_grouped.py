#!/usr/bin/env python3
"""bench/cuda/cublas_grouped.py's mapping of the grouped GEMM's row-major passes onto cuBLAS's
column-major GEMMs, without a GPU: each group's arguments, read the way cuBLAS reads them (element
(i, l) of op(A) at offset + i + l * lda, or transposed), must compute exactly what the pass defines
on row-major lists (fwd y_e = x_e w_e^T, dX dx_e = dy_e w_e, dW dw_e = dy_e^T x_e), with an empty
expert among them."""
import os
import random
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "bench", "cuda"))
import cublas_grouped  # noqa: E402

E, H, I = 3, 5, 4
OFFSETS = [0, 2, 2, 6]  # expert 1 has no rows
R = OFFSETS[-1]


def column_major_gemm(g, operands, out):
    """C = op(A) op(B) into `out` as cuBLAS would, from the group's arguments."""
    (a_name, a_off), (b_name, b_off), (_, c_off) = g["A"], g["B"], g["C"]
    a, b = operands[a_name], operands[b_name]

    def op_a(i, l):
        return a[a_off + i + l * g["lda"]] if g["transa"] == cublas_grouped.OP_N else a[a_off + l + i * g["lda"]]

    def op_b(l, j):
        return b[b_off + l + j * g["ldb"]] if g["transb"] == cublas_grouped.OP_N else b[b_off + j + l * g["ldb"]]

    for i in range(g["m"]):
        for j in range(g["n"]):
            out[c_off + i + j * g["ldc"]] = sum(op_a(i, l) * op_b(l, j) for l in range(g["k"]))


class CublasGroupedTest(unittest.TestCase):
    def setUp(self):
        rng = random.Random(3)
        self.xs = [rng.randint(-4, 4) for _ in range(R * H)]  # [R, H] row-major, expert order
        self.dys = [rng.randint(-4, 4) for _ in range(R * I)]  # [R, I]
        self.w = [rng.randint(-4, 4) for _ in range(E * I * H)]  # [E, I, H]

    def run_pass(self, pass_, size):
        out = [None] * size
        operands = {"xs": self.xs, "dys": self.dys, "w": self.w}
        for e in range(E):
            rows = OFFSETS[e + 1] - OFFSETS[e]
            if rows:
                column_major_gemm(cublas_grouped.group_args(pass_, e, OFFSETS[e], rows, H, I), operands, out)
        return out

    def expert(self, r):
        return next(e for e in range(E) if OFFSETS[e] <= r < OFFSETS[e + 1])

    def test_fwd(self):
        got = self.run_pass("fwd", R * I)
        for r in range(R):
            for n in range(I):
                want = sum(self.xs[r * H + k] * self.w[(self.expert(r) * I + n) * H + k] for k in range(H))
                self.assertEqual(got[r * I + n], want, (r, n))

    def test_dx(self):
        got = self.run_pass("dX", R * H)
        for r in range(R):
            for n in range(H):
                want = sum(self.dys[r * I + k] * self.w[(self.expert(r) * I + k) * H + n] for k in range(I))
                self.assertEqual(got[r * H + n], want, (r, n))

    def test_dw(self):
        got = self.run_pass("dW", E * I * H)
        for e in range(E):
            for m in range(I):
                for n in range(H):
                    cell = got[(e * I + m) * H + n]
                    if OFFSETS[e + 1] == OFFSETS[e]:  # left out of the call: the caller's zeros stay
                        self.assertIsNone(cell, (e, m, n))
                        continue
                    want = sum(self.dys[r * I + m] * self.xs[r * H + n] for r in range(OFFSETS[e], OFFSETS[e + 1]))
                    self.assertEqual(cell, want, (e, m, n))

    def test_unknown_pass(self):
        with self.assertRaisesRegex(ValueError, "fwd, dX or dW"):
            cublas_grouped.group_args("bwd", 0, 0, 1, H, I)


if __name__ == "__main__":
    unittest.main()
