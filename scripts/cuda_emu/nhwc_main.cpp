// nhwc_main.cpp: the channels-last kernels (backend/cuda/nhwc.go) against
// plain loops over NCHW tensors, on the CPU (see run.sh): to_nhwc's
// layout, rounding and channel padding, pool2d_nhwc's MaxPool and
// AveragePool, mean_hw_nhwc.
#include "prelude.h"
#include "nhwc.cu"
int main() {
	std::mt19937 rng(7);
	std::normal_distribution<float> nd;
	int bad = 0;
	Dim3 grid{3, 1, 1}, block{64, 1, 1};
	// to_nhwc: N×C×HW → N×HW×Cp, 16 bits, zeros beyond C.
	for (int mode = 0; mode < 2; mode++) for (int C : {3, 8, 13}) {
		const int N = 2, HW = 15, Cp = (C + 7) / 8 * 8;
		std::vector<float> x(N * C * HW);
		for (auto& v : x) v = nd(rng);
		std::vector<u16> xh(x.size());
		for (size_t i = 0; i < x.size(); i++) xh[i] = round_h(x[i], mode);
		std::vector<uint4> y(N * HW * Cp / 8), yh(y.size());
		launch(grid, block, [&] { to_nhwc_t<float>(x.data(), y.data(), N, C, HW, Cp, mode); });
		launch(grid, block, [&] { to_nhwc_t<u16>(xh.data(), yh.data(), N, C, HW, Cp, mode); });
		int wrong = 0;
		for (int b = 0; b < N; b++) for (int p = 0; p < HW; p++) for (int c = 0; c < Cp; c++) {
			u16 want = c < C ? round_h(x[(b * C + c) * HW + p], mode) : 0;
			u16 got, goth;
			memcpy(&got, (const char*)y.data() + 2 * ((b * HW + p) * Cp + c), 2);
			memcpy(&goth, (const char*)yh.data() + 2 * ((b * HW + p) * Cp + c), 2);
			wrong += got != want || goth != want;
		}
		printf("to_nhwc C%d mode%d: %d wrong\n", C, mode, wrong);
		bad += wrong != 0;
	}
	// pool2d_nhwc against the same pooling over NCHW.
	struct PCase { int N, C, H, W, K, S, P; bool isMax, incl; };
	for (auto pc : {PCase{2, 5, 9, 8, 3, 2, 1, true, false}, PCase{1, 4, 7, 7, 3, 1, 1, false, true}, PCase{2, 3, 6, 9, 2, 2, 0, false, false}, PCase{1, 6, 5, 5, 3, 2, 1, false, false}}) {
		const int OH = (pc.H + 2 * pc.P - pc.K) / pc.S + 1, OW = (pc.W + 2 * pc.P - pc.K) / pc.S + 1;
		std::vector<float> x(pc.N * pc.C * pc.H * pc.W), xn(x.size()), y(pc.N * pc.C * OH * OW);
		for (auto& v : x) v = nd(rng);
		for (int b = 0; b < pc.N; b++) for (int c = 0; c < pc.C; c++) for (int h = 0; h < pc.H; h++) for (int w = 0; w < pc.W; w++)
			xn[((b * pc.H + h) * pc.W + w) * pc.C + c] = x[((b * pc.C + c) * pc.H + h) * pc.W + w];
		Pool p{pc.N * pc.C, pc.H, pc.W, OH, OW, pc.K, pc.K, pc.S, pc.S, pc.P, pc.P, pc.P, pc.P, 1, 1, pc.isMax, pc.incl};
		launch(grid, block, [&] { pool2d_nhwc32(xn.data(), y.data(), p, pc.C, 0); });
		// The same from 16-bit values, against the rounded input.
		std::vector<u16> xh(xn.size());
		std::vector<float> yh(y.size());
		for (size_t i = 0; i < xn.size(); i++) xh[i] = round_h(xn[i], 0);
		launch(grid, block, [&] { pool2d_nhwc_h(xh.data(), yh.data(), p, pc.C, 0); });
		std::vector<float> y64(y.size());
		launch(grid, block, [&] { pool2d_nhwc(xn.data(), y64.data(), p, pc.C, 0); });
		bad += y64 != y;
		double worst = 0, worst16 = 0;
		for (int b = 0; b < pc.N; b++) for (int c = 0; c < pc.C; c++) for (int oh = 0; oh < OH; oh++) for (int ow = 0; ow < OW; ow++) {
			double acc = pc.isMax ? -INFINITY : 0;
			int cnt = 0;
			for (int i = 0; i < pc.K; i++) for (int j = 0; j < pc.K; j++) {
				int h = oh * pc.S - pc.P + i, w = ow * pc.S - pc.P + j;
				if (pc.incl && h < pc.H + pc.P && w < pc.W + pc.P) cnt++;
				if (h < 0 || h >= pc.H || w < 0 || w >= pc.W) continue;
				double v = x[((b * pc.C + c) * pc.H + h) * pc.W + w];
				acc = pc.isMax ? std::max(acc, v) : acc + v;
				if (!pc.incl) cnt++;
			}
			if (!pc.isMax) acc /= cnt;
			worst = std::max(worst, std::fabs(acc - y[((b * OH + oh) * OW + ow) * pc.C + c]));
			worst16 = std::max(worst16, std::fabs(acc - yh[((b * OH + oh) * OW + ow) * pc.C + c]) / (1 + std::fabs(acc)));
		}
		printf("pool2d_nhwc %dx%d k%d s%d p%d max%d incl%d: max error %.3g, from 16 bits %.3g\n", pc.H, pc.W, pc.K, pc.S, pc.P, pc.isMax, pc.incl, worst, worst16);
		bad += !(worst < 1e-5) || !(worst16 < 8e-3);
	}
	// mean_hw_nhwc: y[b, c] = mean over positions.
	{
		const int N = 3, C = 7, HW = 10;
		std::vector<float> x(N * HW * C), y(N * C);
		for (auto& v : x) v = nd(rng);
		launch(grid, block, [&] { mean_hw_nhwc(x.data(), y.data(), N * C, HW, C, 1.f / HW, 0); });
		double worst = 0;
		for (int b = 0; b < N; b++) for (int c = 0; c < C; c++) {
			double s = 0;
			for (int p = 0; p < HW; p++) s += x[(b * HW + p) * C + c];
			worst = std::max(worst, std::fabs(s / HW - y[b * C + c]));
		}
		printf("mean_hw_nhwc: max error %.3g\n", worst);
		bad += !(worst < 1e-5);
	}
	return bad;
}
