// gemv_half.h: the gemv kernels' f16 conversions on the CPU (the kernels'
// own are inline PTX): f16 to float, and a float rounded to f16 and back,
// ties to even.
inline float gv_h2f(u32 h) {
	_Float16 v;
	u16 b = (u16)h;
	memcpy(&v, &b, 2);
	return (float)v;
}
inline float gv_f16r(float v) { return (float)(_Float16)v; }
