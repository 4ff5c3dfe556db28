"""tools/sass_counts.py on cuobjdump-style text: opcodes counted after predicates (STS apart from
STSM), and the hot loop found from a backward branch to an address (cuobjdump prints no labels)."""

from __future__ import annotations



import sass_counts  # noqa: E402

SASS = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
        /*0010*/                   STSM.16.M88.4 [R3], R4 ;               /* 0x0000000000000000 */
        /*0020*/                   LDGSTS.E.BYPASS.128 [R5], desc[UR4][R6.64] ;   /* 0x0 */
        /*0030*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8], R24 ;     /* 0x0 */
        /*0040*/               @P0 LDGSTS.E.BYPASS.128 [R5], desc[UR4][R6.64] ;   /* 0x0 */
        /*0050*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;          /* 0x0 */
        /*0060*/               @P0 BRA 0x20 ;                             /* 0x0 */
        /*0070*/                   STS.128 [R3], R8 ;                     /* 0x0 */
        /*0080*/                   STG.E.128 desc[UR4][R10.64], R8 ;      /* 0x0 */
        /*0090*/                   BRA 0x90;                              /* 0x0 */
"""


def test_counts_whole_kernel_and_hot_loop():
    counts = sass_counts.counts(SASS)
    whole, loop = counts["all"], counts["loop"]
    assert (whole["STSM"], whole["STS"], whole["LDGSTS"], whole["HGMMA"], whole["STG"]) == (1, 1, 2, 1, 1)
    assert loop["instructions"] == 5  # 0x20 .. 0x60; the self-branch at 0x90 is no longer
    assert (loop["LDGSTS"], loop["HGMMA"], loop["BAR.SYNC"], loop["STSM"]) == (2, 1, 1, 0)
    assert "loop(5 instr)" in sass_counts.brief(counts)


def test_sass_of_takes_the_compilers_text_first_and_else_disassembles_the_cubin(monkeypatch):
    class Compiled:
        def __init__(self, sass, cubin):
            self.asm, self.cubin = {"sass": sass}, cubin

    seen = []
    monkeypatch.setattr(sass_counts, "disassemble", lambda cubin, tool: seen.append(cubin) or "D")
    assert sass_counts.sass_of(Compiled(SASS, b"elf")) == SASS and seen == []
    assert sass_counts.sass_of(Compiled(None, b"elf")) == "D" and seen == [b"elf"]


def test_disassemble_needs_a_cubin_and_a_tool():
    assert sass_counts.disassemble(None, "cuobjdump") == ""
    assert sass_counts.disassemble(b"elf", None) == ""
