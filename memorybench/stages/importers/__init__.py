"""What every importer of released results shares, whichever benchmark's format it reads.

`memorybench import FILE --format NAME` (`memorybench.stages.import_results`) hands the files
to the importer of the benchmark whose record lists the format (`released_formats`, `importer`:
LoCoMo's, LongMemEval's and BEAM's each live in their package). They share:

    _base.py  reading a released file bounded and never through a link (`read_json`,
              `read_bytes`, `released_json` for `.gz`), one-line shape errors, and rows a pack
              can hold (`finite`, `bounded_rows`: no NaN or Infinity, answers cut as a qa answer is)
    _pack.py  the pack built in a temp folder and renamed into place whole, found again when the
              same files are imported twice; a file's own labels as a judge folder; TRACE.md's head
    amb.py    AMB's per-question output (vectorize-io/agent-memory-benchmark), the layout every
              dataset's AMB file shares (BEAM's `amb_beam`, LoCoMo's `amb_locomo`)
"""
