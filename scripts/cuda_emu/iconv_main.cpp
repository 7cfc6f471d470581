// iconv_main.cpp: iconv (backend/cuda/iconv.go) against a float64
// convolution, block by block on the CPU (see run.sh).
#include "prelude.h"
#include "iconv.cu"
struct Case { int N, C, H, W, OC, KH, KW, SH, SW, PH, PW, DH, DW; bool bias, xh, yh; int mode; };
int main() {
	Case cases[] = {
		{2, 5, 9, 11, 40, 3, 3, 1, 1, 1, 1, 1, 1, true, false, false, 0},
		{1, 3, 37, 37, 16, 7, 7, 2, 2, 3, 3, 1, 1, true, false, true, 0},
		{2, 16, 7, 7, 136, 1, 1, 1, 1, 0, 0, 1, 1, false, true, false, 1},
		{3, 8, 12, 10, 24, 3, 3, 2, 2, 2, 2, 2, 2, true, true, true, 0},
	};
	std::mt19937 rng(5);
	std::normal_distribution<float> nd;
	int bad = 0;
	for (auto& c : cases) {
		int OH = (c.H + 2 * c.PH - c.DH * (c.KH - 1) - 1) / c.SH + 1, OW = (c.W + 2 * c.PW - c.DW * (c.KW - 1) - 1) / c.SW + 1;
		int K = c.C * c.KH * c.KW;
		std::vector<float> x(c.N * c.C * c.H * c.W), wf(c.OC * K), b(c.OC);
		for (auto& v : x) v = widen_h(round_h(nd(rng), c.mode), c.mode);
		for (auto& v : wf) v = widen_h(round_h(nd(rng), c.mode), c.mode);
		for (auto& v : b) v = nd(rng);
		std::vector<u16> xh(x.size()), w(wf.size());
		for (size_t i = 0; i < x.size(); i++) xh[i] = round_h(x[i], c.mode);
		for (size_t i = 0; i < wf.size(); i++) w[i] = round_h(wf[i], c.mode);
		int NY = c.N * c.OC * OH * OW;
		std::vector<float> yf(NY, NAN);
		std::vector<u16> yh(NY, 0xffff);
		IConv q{c.N, c.C, c.H, c.W, c.OC, OH, OW, c.KH, c.KW, c.SH, c.SW, c.PH, c.PW, c.DH, c.DW, 1};
		int NP = c.N * OH * OW;
		Dim3 g{(unsigned)((NP + 127) / 128), (unsigned)((c.OC + 127) / 128), 1}, bl{256, 1, 1};
		const float* bp = c.bias ? b.data() : nullptr;
		launch(g, bl, [&] {
			if (c.xh && c.yh) iconv_t<u16, u16>(xh.data(), w.data(), bp, yh.data(), q, c.mode);
			else if (c.xh) iconv_t<u16, float>(xh.data(), w.data(), bp, yf.data(), q, c.mode);
			else if (c.yh) iconv_t<float, u16>(x.data(), w.data(), bp, yh.data(), q, c.mode);
			else iconv_t<float, float>(x.data(), w.data(), bp, yf.data(), q, c.mode);
		});
		double num = 0, den = 0;
		for (int n = 0; n < c.N; n++) for (int oc = 0; oc < c.OC; oc++) for (int oh = 0; oh < OH; oh++) for (int ow = 0; ow < OW; ow++) {
			double s = c.bias ? b[oc] : 0;
			for (int ci = 0; ci < c.C; ci++) for (int kh = 0; kh < c.KH; kh++) for (int kw = 0; kw < c.KW; kw++) {
				int ih = oh * c.SH - c.PH + kh * c.DH, iw = ow * c.SW - c.PW + kw * c.DW;
				if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
				s += (double)x[((n * c.C + ci) * c.H + ih) * c.W + iw] * wf[((oc * c.C + ci) * c.KH + kh) * c.KW + kw];
			}
			int at = ((n * c.OC + oc) * OH + oh) * OW + ow;
			double got = c.yh ? widen_h(yh[at], c.mode) : yf[at];
			num += (got - s) * (got - s); den += s * s;
		}
		double rel = sqrt(num / den);
		printf("case N%d C%d %dx%d OC%d k%dx%d s%d p%d d%d xh%d yh%d mode%d: rel L2 %.3g\n", c.N, c.C, c.H, c.W, c.OC, c.KH, c.KW, c.SH, c.PH, c.DH, c.xh, c.yh, c.mode, rel);
		if (!(rel < (c.yh ? 1e-2 : 1e-5))) bad++;
	}
	return bad;
}
