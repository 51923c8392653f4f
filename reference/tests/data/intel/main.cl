// atomcts: OpenCL C kernels whose local-memory atomics make IGC emit vISA `dword_atomic`
// (issue 29). Compiled by regen.sh with ocloc for every device; only the vISA text of the
// atomics is kept (main_<device>.visa). IGC's own `__builtin_IB_atomic_*_local_*` built-ins are
// the route to the `.16` forms and to float min/max/compare-exchange.

int   __builtin_IB_atomic_add_local_i32(local int *, int);
int   __builtin_IB_atomic_sub_local_i32(local int *, int);
int   __builtin_IB_atomic_inc_local_i32(local int *);
int   __builtin_IB_atomic_dec_local_i32(local int *);
int   __builtin_IB_atomic_min_local_i32(local int *, int);
int   __builtin_IB_atomic_max_local_i32(local int *, int);
uint  __builtin_IB_atomic_min_local_u32(local uint *, uint);
uint  __builtin_IB_atomic_max_local_u32(local uint *, uint);
int   __builtin_IB_atomic_xchg_local_i32(local int *, int);
int   __builtin_IB_atomic_cmpxchg_local_i32(local int *, int, int);
int   __builtin_IB_atomic_and_local_i32(local int *, int);
int   __builtin_IB_atomic_or_local_i32(local int *, int);
int   __builtin_IB_atomic_xor_local_i32(local int *, int);

short  __builtin_IB_atomic_add_local_i16(local short *, short);
short  __builtin_IB_atomic_sub_local_i16(local short *, short);
short  __builtin_IB_atomic_inc_local_i16(local short *);
short  __builtin_IB_atomic_dec_local_i16(local short *);
short  __builtin_IB_atomic_min_local_i16(local short *, short);
short  __builtin_IB_atomic_max_local_i16(local short *, short);
ushort __builtin_IB_atomic_min_local_u16(local ushort *, ushort);
ushort __builtin_IB_atomic_max_local_u16(local ushort *, ushort);
short  __builtin_IB_atomic_xchg_local_i16(local short *, short);
short  __builtin_IB_atomic_cmpxchg_local_i16(local short *, short, short);
short  __builtin_IB_atomic_and_local_i16(local short *, short);
short  __builtin_IB_atomic_or_local_i16(local short *, short);
short  __builtin_IB_atomic_xor_local_i16(local short *, short);

float __builtin_IB_atomic_min_local_f32(local float *, float);
float __builtin_IB_atomic_max_local_f32(local float *, float);
float __builtin_IB_atomic_cmpxchg_local_f32(local float *, float, float);
half  __builtin_IB_atomic_min_local_f16(local half *, half);
half  __builtin_IB_atomic_max_local_f16(local half *, half);
half  __builtin_IB_atomic_cmpxchg_local_f16(local half *, half, half);

// One kernel per built-in: a per-lane address (scattered, exec size = SIMD width), the old
// value kept.
#define LANE(T, NAME, CALL)                                                     \
  kernel void NAME(global T *out, global const T *in, global const uint *ix) { \
    local T s[256];                                                             \
    uint l = get_local_id(0);                                                   \
    s[l & 255] = in[l];                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                               \
    local T *p = &s[ix[get_global_id(0)] & 255];                                \
    T a = in[get_global_id(0) + 1], b = in[get_global_id(0) + 2];               \
    out[get_global_id(0)] = CALL;                                               \
  }

// The same with the old value dropped (Dst = null).
#define NORET(T, NAME, CALL)                                                    \
  kernel void NAME(global const T *in, global const uint *ix) {                \
    local T s[256];                                                             \
    uint l = get_local_id(0);                                                   \
    s[l & 255] = in[l];                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                               \
    local T *p = &s[ix[get_global_id(0)] & 255];                                \
    T a = in[get_global_id(0) + 1], b = in[get_global_id(0) + 2];               \
    CALL;                                                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                               \
    ((global T *)in)[l] = s[l & 255];                                           \
  }

LANE(int, l_add_i32, __builtin_IB_atomic_add_local_i32(p, a))
LANE(int, l_sub_i32, __builtin_IB_atomic_sub_local_i32(p, a))
LANE(int, l_inc_i32, __builtin_IB_atomic_inc_local_i32(p))
LANE(int, l_dec_i32, __builtin_IB_atomic_dec_local_i32(p))
LANE(int, l_min_i32, __builtin_IB_atomic_min_local_i32(p, a))
LANE(int, l_max_i32, __builtin_IB_atomic_max_local_i32(p, a))
LANE(uint, l_min_u32, __builtin_IB_atomic_min_local_u32(p, a))
LANE(uint, l_max_u32, __builtin_IB_atomic_max_local_u32(p, a))
LANE(int, l_xchg_i32, __builtin_IB_atomic_xchg_local_i32(p, a))
LANE(int, l_cmpxchg_i32, __builtin_IB_atomic_cmpxchg_local_i32(p, a, b))
LANE(int, l_and_i32, __builtin_IB_atomic_and_local_i32(p, a))
LANE(int, l_or_i32, __builtin_IB_atomic_or_local_i32(p, a))
LANE(int, l_xor_i32, __builtin_IB_atomic_xor_local_i32(p, a))

LANE(short, l_add_i16, __builtin_IB_atomic_add_local_i16(p, a))
LANE(short, l_sub_i16, __builtin_IB_atomic_sub_local_i16(p, a))
LANE(short, l_inc_i16, __builtin_IB_atomic_inc_local_i16(p))
LANE(short, l_dec_i16, __builtin_IB_atomic_dec_local_i16(p))
LANE(short, l_min_i16, __builtin_IB_atomic_min_local_i16(p, a))
LANE(short, l_max_i16, __builtin_IB_atomic_max_local_i16(p, a))
LANE(ushort, l_min_u16, __builtin_IB_atomic_min_local_u16(p, a))
LANE(ushort, l_max_u16, __builtin_IB_atomic_max_local_u16(p, a))
LANE(short, l_xchg_i16, __builtin_IB_atomic_xchg_local_i16(p, a))
LANE(short, l_cmpxchg_i16, __builtin_IB_atomic_cmpxchg_local_i16(p, a, b))
LANE(short, l_and_i16, __builtin_IB_atomic_and_local_i16(p, a))
LANE(short, l_or_i16, __builtin_IB_atomic_or_local_i16(p, a))
LANE(short, l_xor_i16, __builtin_IB_atomic_xor_local_i16(p, a))

LANE(float, l_min_f32, __builtin_IB_atomic_min_local_f32(p, a))
LANE(float, l_max_f32, __builtin_IB_atomic_max_local_f32(p, a))
LANE(float, l_cmpxchg_f32, __builtin_IB_atomic_cmpxchg_local_f32(p, a, b))
LANE(half, l_min_f16, __builtin_IB_atomic_min_local_f16(p, a))
LANE(half, l_max_f16, __builtin_IB_atomic_max_local_f16(p, a))
LANE(half, l_cmpxchg_f16, __builtin_IB_atomic_cmpxchg_local_f16(p, a, b))

NORET(int, n_add_i32, __builtin_IB_atomic_add_local_i32(p, a))
NORET(int, n_inc_i32, __builtin_IB_atomic_inc_local_i32(p))
NORET(int, n_cmpxchg_i32, __builtin_IB_atomic_cmpxchg_local_i32(p, a, b))
NORET(short, n_add_i16, __builtin_IB_atomic_add_local_i16(p, a))
NORET(float, n_max_f32, __builtin_IB_atomic_max_local_f32(p, a))

// OpenCL C's own atomics on local memory.
LANE(int, c_add, atomic_add(p, a))
LANE(uint, c_umin, atomic_min(p, a))
LANE(int, c_imax, atomic_max(p, a))
LANE(int, c_inc, atomic_inc(p))
LANE(int, c_dec, atomic_dec(p))
LANE(float, c_xchg_f, atomic_xchg(p, a))
LANE(int, c_cmpxchg, atomic_cmpxchg(p, a, b))

// A uniform address: IGC may aggregate the lanes into one atomic of exec size 1.
kernel void u_add(global int *out, global const int *in) {
  local int s[4];
  if (get_local_id(0) == 0) s[0] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  atomic_add(&s[0], 1);
  atomic_add(&s[1], in[0]);
  out[get_global_id(0)] = atomic_inc(&s[2]);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) out[0] = s[0] + s[1];
}

// Divergent control flow around the atomic.
kernel void d_add(global int *out, global const int *in, global const uint *ix) {
  local int s[256];
  uint l = get_local_id(0);
  s[l & 255] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  int r = 0;
  if (in[get_global_id(0)] & 1)
    r = atomic_add(&s[ix[get_global_id(0)] & 255], in[l]);
  out[get_global_id(0)] = r;
}
