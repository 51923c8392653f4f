// atomcts: held-out OpenCL C kernels for the vISA listings test (issue 29). Written after the
// front end was made to read main.cl's listings; their lines are only run by the held-out test.

#pragma OPENCL EXTENSION cl_khr_local_int32_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_local_int32_extended_atomics : enable

short  __builtin_IB_atomic_add_local_i16(local short *, short);
ushort __builtin_IB_atomic_max_local_u16(local ushort *, ushort);
short  __builtin_IB_atomic_cmpxchg_local_i16(local short *, short, short);
short  __builtin_IB_atomic_xchg_local_i16(local short *, short);
float  __builtin_IB_atomic_cmpxchg_local_f32(local float *, float, float);
float  __builtin_IB_atomic_min_local_f32(local float *, float);
half   __builtin_IB_atomic_max_local_f16(local half *, half);
int    __builtin_IB_atomic_dec_local_i32(local int *);

typedef struct { int a; uint b; short c; short d; float e; } rec;

// Chained atomics: each result feeds the next operand.
kernel void h_chain(global int *out, global const int *in) {
  local rec r[64];
  uint l = get_local_id(0);
  r[l & 63].a = in[l]; r[l & 63].b = 0; r[l & 63].c = 0; r[l & 63].d = 0; r[l & 63].e = 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint k = (uint)in[get_global_id(0)] & 63;
  int x = atom_add(&r[k].a, in[l + 1]);
  uint y = atom_max(&r[k ^ 1].b, (uint)x);
  short z = __builtin_IB_atomic_add_local_i16(&r[k].c, (short)y);
  short w = __builtin_IB_atomic_cmpxchg_local_i16(&r[k].d, z, (short)x);
  float f = __builtin_IB_atomic_min_local_f32(&r[k].e, (float)w);
  out[get_global_id(0)] = x + (int)y + z + w + (int)f;
}

// Atomics under divergent control flow and in a loop.
kernel void h_loop(global uint *out, global const uint *in, uint n) {
  local uint s[128];
  uint l = get_local_id(0);
  s[l & 127] = l;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint acc = 0;
  for (uint i = 0; i < n; i++) {
    uint v = in[get_global_id(0) * n + i];
    if (v & 1) acc += atomic_xor(&s[v & 127], v);
    else acc += atomic_min(&s[(v >> 1) & 127], acc);
  }
  out[get_global_id(0)] = acc;
}

// Uniform addresses and values of several ops.
kernel void h_uniform(global int *out, global const int *in) {
  local int s[8];
  local uint u[8];
  if (get_local_id(0) < 8) { s[get_local_id(0)] = 0; u[get_local_id(0)] = 0; }
  barrier(CLK_LOCAL_MEM_FENCE);
  atomic_sub(&s[0], 2);
  atomic_or(&u[1], 4u);
  atomic_max(&s[2], in[0]);
  atomic_dec(&s[3]);
  atomic_and(&u[4], (uint)in[1]);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) < 8) out[get_local_id(0)] = s[get_local_id(0)] + (int)u[get_local_id(0)];
}

// Compare-exchange loops (float via the built-in) and 16-bit exchanges.
kernel void h_cas(global float *out, global const float *in, global const uint *ix) {
  local float s[64];
  local short h[64];
  local ushort m[64];
  local half g[64];
  local int c[64];
  uint l = get_local_id(0);
  s[l & 63] = 0.0f; h[l & 63] = 0; m[l & 63] = 0; g[l & 63] = 0; c[l & 63] = 64;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint k = ix[get_global_id(0)] & 63;
  float old = s[k], seen;
  do {
    seen = old;
    old = __builtin_IB_atomic_cmpxchg_local_f32(&s[k], seen, seen + in[get_global_id(0)]);
  } while (as_uint(old) != as_uint(seen));
  short e = __builtin_IB_atomic_xchg_local_i16(&h[k], (short)k);
  ushort mx = __builtin_IB_atomic_max_local_u16(&m[k], (ushort)(k * 3));
  half gx = __builtin_IB_atomic_max_local_f16(&g[k], (half)in[l]);
  int d = __builtin_IB_atomic_dec_local_i32(&c[k]);
  out[get_global_id(0)] = old + e + mx + (float)gx + d;
}
