// Broadcasts the nine floats at register r (a 3×3 filter, or the first
// rows of a larger one) into Z0..Z8.
#define BCAST9(r) \
	VBROADCASTSS (r), Z0;   \
	VBROADCASTSS 4(r), Z1;  \
	VBROADCASTSS 8(r), Z2;  \
	VBROADCASTSS 12(r), Z3; \
	VBROADCASTSS 16(r), Z4; \
	VBROADCASTSS 20(r), Z5; \
	VBROADCASTSS 24(r), Z6; \
	VBROADCASTSS 28(r), Z7; \
	VBROADCASTSS 32(r), Z8
