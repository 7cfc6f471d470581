// gemv_half.h: the gemv kernels' inline PTX on the CPU: f16 to float, a
// float rounded to f16 and back (ties to even), and the copies straight
// to shared memory (done at once: waiting for them is nothing).
inline float gv_h2f(u32 h) {
	_Float16 v;
	u16 b = (u16)h;
	memcpy(&v, &b, 2);
	return (float)v;
}
inline float gv_f16r(float v) { return (float)(_Float16)v; }
inline void gv_cp16(void* dst, const void* src) { memcpy(dst, src, 16); }
inline void gv_commit() {}
template <int N> inline void gv_wait() {}
