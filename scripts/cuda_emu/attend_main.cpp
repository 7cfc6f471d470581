// attend_main.cpp: the fused attention (backend/cuda/attend.go) against a
// float64 softmax attention, block by block on the CPU (see run.sh).
#include "prelude.h"
#include "attend.cu"
struct ACase { int B, H, S, T, D; int mop; bool h16; bool causal; };
int main() {
	ACase cases[] = {
		{2, 3, 128, 128, 64, 0, true, false},
		{1, 2, 70, 45, 64, 1, true, false},
		{2, 2, 40, 40, 32, 1, false, true},
		{1, 2, 64, 64, 128, 0, true, false},
		{1, 1, 33, 70, 64, 0, true, false},
		{2, 3, 128, 128, 64, 1, true, false}, // BERT's padding mask over two tiles of keys
	};
	std::mt19937 rng(9);
	std::normal_distribution<float> nd;
	int bad = 0;
	for (auto& c : cases) {
		int mode = 0;
		// [B, S, H, D] layouts (heads split from the projections).
		auto mk = [&](int rows) { std::vector<float> x((size_t)c.B * rows * c.H * c.D); for (auto& v : x) v = widen_h(round_h(nd(rng), mode), mode); return x; };
		auto q = mk(c.S), k = mk(c.T), v = mk(c.T);
		std::vector<u16> qh(q.size()), kh(k.size()), vh(v.size());
		for (size_t i = 0; i < q.size(); i++) qh[i] = round_h(q[i], mode);
		for (size_t i = 0; i < k.size(); i++) kh[i] = round_h(k[i], mode);
		for (size_t i = 0; i < v.size(); i++) vh[i] = round_h(v[i], mode);
		std::vector<float> mask;
		Attend p{};
		p.B = c.B; p.H = c.H; p.S = c.S; p.T = c.T; p.D = c.D; p.E = c.D;
		i64 qs[4] = {(i64)c.S * c.H * c.D, c.D, (i64)c.H * c.D, 1}, ks[4] = {(i64)c.T * c.H * c.D, c.D, (i64)c.H * c.D, 1};
		for (int i = 0; i < 4; i++) { p.q[i] = qs[i]; p.k[i] = ks[i]; p.v[i] = ks[i]; p.o[i] = qs[i]; }
		if (c.mop == 1 && !c.causal) { // padding: [B,1,1,T]
			mask.resize((size_t)c.B * c.T);
			for (int b = 0; b < c.B; b++) for (int t = 0; t < c.T; t++) mask[b * c.T + t] = t >= c.T - 5 * b - 3 ? -1e9f : 0.f;
			p.m[0] = c.T; p.m[1] = 0; p.m[2] = 0; p.m[3] = 1;
		} else if (c.causal) { // [1,1,S,T]
			mask.resize((size_t)c.S * c.T);
			for (int s = 0; s < c.S; s++) for (int t = 0; t < c.T; t++) mask[s * c.T + t] = t > s + c.T - c.S ? -1e9f : 0.f;
			p.m[0] = 0; p.m[1] = 0; p.m[2] = c.T; p.m[3] = 1;
		}
		float mul = 1.f / std::sqrt((float)c.D);
		std::vector<float> out(q.size(), NAN);
		Dim3 g{(unsigned)((c.S + 63) / 64), (unsigned)c.H, (unsigned)c.B}, bl{128, 1, 1};
		int h16 = c.h16 ? 7 : 0;
		const void *qp = c.h16 ? (const void*)qh.data() : q.data(), *kp = c.h16 ? (const void*)kh.data() : k.data(), *vp = c.h16 ? (const void*)vh.data() : v.data();
		launch(g, bl, [&] {
			if (c.D == 32) attend_mma_t<32, float>(qp, kp, vp, mask.empty() ? nullptr : mask.data(), out.data(), p, mul, 0.f, c.mop, mode, h16);
			else if (c.D == 64) attend_mma_t<64, float>(qp, kp, vp, mask.empty() ? nullptr : mask.data(), out.data(), p, mul, 0.f, c.mop, mode, h16);
			else attend_mma_t<128, float>(qp, kp, vp, mask.empty() ? nullptr : mask.data(), out.data(), p, mul, 0.f, c.mop, mode, h16);
		});
		double num = 0, den = 0;
		for (int b = 0; b < c.B; b++) for (int h = 0; h < c.H; h++) for (int s = 0; s < c.S; s++) {
			std::vector<double> sc(c.T);
			double mx = -1e300;
			for (int t = 0; t < c.T; t++) {
				double x = 0;
				for (int d = 0; d < c.D; d++) x += (double)q[((size_t)(b * c.S + s) * c.H + h) * c.D + d] * k[((size_t)(b * c.T + t) * c.H + h) * c.D + d];
				x *= mul;
				if (!mask.empty()) x += c.causal ? mask[s * c.T + t] : mask[b * c.T + t];
				sc[t] = x; mx = std::max(mx, x);
			}
			double sum = 0;
			for (auto& x : sc) { x = std::exp(x - mx); sum += x; }
			for (int d = 0; d < c.D; d++) {
				double o = 0;
				for (int t = 0; t < c.T; t++) o += sc[t] / sum * v[((size_t)(b * c.T + t) * c.H + h) * c.D + d];
				double got = out[((size_t)(b * c.S + s) * c.H + h) * c.D + d];
				num += (got - o) * (got - o); den += o * o;
			}
		}
		double rel = std::sqrt(num / den);
		printf("B%d H%d S%d T%d D%d mop%d h16 %d causal %d: rel L2 %.3g\n", c.B, c.H, c.S, c.T, c.D, c.mop, c.h16, c.causal, rel);
		if (!(rel < 1e-2)) bad++;
	}
	return bad;
}
