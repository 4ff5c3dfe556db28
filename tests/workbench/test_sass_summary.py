"""SASS in a few numbers (notebook 03, bench/record_notebook_data.py): mnemonics counted with their
predicates and modifiers stripped, and the excerpt around the first tensor-core instruction."""

from __future__ import annotations

from tileworkbench.workbench.sass_summary import (
    count_instructions,
    mnemonics,
    tensor_core_excerpt,
    without_folders,
)

SASS = """\
        .text.k:
        //## File "k.py", line 9
        /*0100*/                   LDSM.16.M88.4 R28, [R33] ;
        /*0110*/              @!P0 LDGSTS.E.BYPASS.128 [R5], desc[UR4][R2.64] ;
        /*0120*/                   FFMA R1, R2, R3, R4 ;
        //## File "k.py", line 10
        /*0130*/                   HMMA.16816.F32 R52, R28, R24.reuse, R52 ;
        /*0140*/               @P1 HMMA.16816.F32 R56, R12, R24, R56 ;
        /*0150*/                   EXIT ;
        // HMMA in a comment is no instruction
"""


def test_counts_strip_predicates_and_modifiers():
    assert mnemonics(SASS) == ["LDSM", "LDGSTS", "FFMA", "HMMA", "HMMA", "EXIT"]
    counts = count_instructions(SASS)
    assert counts == {"HMMA": 2, "HGMMA": 0, "LDSM": 1, "LDGSTS": 1, "UTMALDG": 0, "FFMA": 1}
    assert count_instructions(SASS, ("EXIT",)) == {"EXIT": 1}


def test_excerpt_is_around_the_first_mma():
    excerpt = tensor_core_excerpt(SASS, before=1, after=2).splitlines()
    assert excerpt[0].strip() == '//## File "k.py", line 10'
    assert "HMMA" in excerpt[1] and "@P1 HMMA" in excerpt[2] and len(excerpt) == 3
    assert tensor_core_excerpt(SASS.replace("HMMA", "HADD2")) == ""


def test_excerpt_holds_no_folder_of_the_checkout():
    sass = SASS.replace('"k.py"', '"/home/someone/checkout/tileworkbench/k.py"')
    excerpt = tensor_core_excerpt(sass, before=1, after=2)
    assert excerpt.splitlines()[0].strip() == '//## File "k.py", line 10'
    assert without_folders('//## File "C:\\work\\k.py", line 3') == '//## File "k.py", line 3'


def test_recorded_sass_holds_no_absolute_path():
    import json
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "03_matmul.json"
    sass = json.loads(data.read_text()).get("sass", {})
    assert '//## File "/' not in sass.get("excerpt", ""), "re-record: the excerpt holds a path"
