"""Hand-written PTX kernels for the GPU launcher tests (sm_80+, PTX 8.0)."""

ADD_PTX = """
.version 8.0
.target sm_80
.address_size 64

// out[i] = x[i] + y[i] for i < n, one element per thread
.visible .entry add_f32(
    .param .u64 x_ptr,
    .param .u64 y_ptr,
    .param .u64 out_ptr,
    .param .s32 n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [y_ptr];
    ld.param.u64 %rd3, [out_ptr];
    ld.param.s32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
DONE:
    ret;
}
"""

# out[b*T + t] = x[b*T + (t+1) % T]: staged through dynamic shared memory at byte `offset`
ROTATE_PTX = """
.version 8.0
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 smem[];

.visible .entry rotate_f32(
    .param .u64 x_ptr,
    .param .u64 out_ptr,
    .param .u32 offset
)
{
    .reg .b32 %r<16>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<9>;

    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [out_ptr];
    ld.param.u32 %r1, [offset];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    ld.global.f32 %f1, [%rd6];
    mov.u32 %r6, smem;
    add.u32 %r7, %r6, %r1;
    shl.b32 %r8, %r4, 2;
    add.u32 %r9, %r7, %r8;
    st.shared.f32 [%r9], %f1;
    bar.sync 0;
    add.u32 %r10, %r4, 1;
    rem.u32 %r11, %r10, %r3;
    shl.b32 %r12, %r11, 2;
    add.u32 %r13, %r7, %r12;
    ld.shared.f32 %f2, [%r13];
    add.s64 %rd7, %rd4, %rd5;
    st.global.f32 [%rd7], %f2;
    ret;
}
"""

ADD_KINDS = ["*fp32", "*fp32", "*fp32", "i32"]
ADD_NAMES = ["x_ptr", "y_ptr", "out_ptr", "n"]
